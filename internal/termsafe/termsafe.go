package termsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s with every character a terminal would interpret, newline
// and tab included, written visibly (see the package documentation).
func Line(s string) string { return escape(s, false, nil) }

// Text is Line for text of several lines: newlines and tabs stay as they
// are. A carriage return is escaped (^M), since it moves the cursor back
// over what the line already showed.
func Text(s string) string { return escape(s, true, nil) }

// Marked is Line (or Text, when multiline is set) with every escape passed
// through mark, so a caller can make escapes stand out (reverse video, say)
// from the same characters typed literally.
func Marked(s string, multiline bool, mark func(string) string) string {
	return escape(s, multiline, mark)
}

// Clean reports whether Line(s) == s.
func Clean(s string) bool { return clean(s, false) }

func clean(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= utf8.RuneSelf {
			return cleanUnicode(s[i:])
		}
		if (b < 0x20 || b == 0x7f) && !(multiline && (b == '\n' || b == '\t')) {
			return false
		}
	}
	return true
}

func cleanUnicode(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || r < 0x20 || r == 0x7f || isC1(r) || Invisible(r) {
			return false
		}
		i += n
	}
	return true
}

func escape(s string, multiline bool, mark func(string) string) string {
	if clean(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	put := func(e string) {
		if mark != nil {
			e = mark(e)
		}
		b.WriteString(e)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case multiline && (c == '\n' || c == '\t'):
				b.WriteByte(c)
			case c < 0x20:
				put(string([]byte{'^', c + '@'}))
			case c == 0x7f:
				put("^?")
			default:
				b.WriteByte(c)
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			put(fmt.Sprintf("<0x%02X>", c))
		case isC1(r) || Invisible(r):
			put(fmt.Sprintf("<U+%04X>", r))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isC1(r rune) bool { return r >= 0x80 && r <= 0x9f }

// Invisible reports characters that render as nothing or change how the
// text around them is ordered: Unicode's default-ignorable code points,
// every format character (Cf: joiners, direction marks, embeddings,
// overrides and isolates, tags, the byte order mark), and the line and
// paragraph separators, which break a line where none is seen.
func Invisible(r rune) bool {
	if r < 0xAD {
		return false
	}
	return unicode.Is(defaultIgnorable, r) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029
}

// Ignorable reports Unicode's Default_Ignorable_Code_Point property, the
// characters HFS+ leaves out when it compares names.
func Ignorable(r rune) bool { return r >= 0xAD && unicode.Is(defaultIgnorable, r) }

// defaultIgnorable is Unicode's Default_Ignorable_Code_Point property
// (DerivedCoreProperties.txt).
var defaultIgnorable = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x00AD, Hi: 0x00AD, Stride: 1},
		{Lo: 0x034F, Hi: 0x034F, Stride: 1},
		{Lo: 0x061C, Hi: 0x061C, Stride: 1},
		{Lo: 0x115F, Hi: 0x1160, Stride: 1},
		{Lo: 0x17B4, Hi: 0x17B5, Stride: 1},
		{Lo: 0x180B, Hi: 0x180F, Stride: 1},
		{Lo: 0x200B, Hi: 0x200F, Stride: 1},
		{Lo: 0x202A, Hi: 0x202E, Stride: 1},
		{Lo: 0x2060, Hi: 0x206F, Stride: 1},
		{Lo: 0x3164, Hi: 0x3164, Stride: 1},
		{Lo: 0xFE00, Hi: 0xFE0F, Stride: 1},
		{Lo: 0xFEFF, Hi: 0xFEFF, Stride: 1},
		{Lo: 0xFFA0, Hi: 0xFFA0, Stride: 1},
		{Lo: 0xFFF0, Hi: 0xFFF8, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x1BCA0, Hi: 0x1BCA3, Stride: 1},
		{Lo: 0x1D173, Hi: 0x1D17A, Stride: 1},
		{Lo: 0xE0000, Hi: 0xE0FFF, Stride: 1},
	},
}

// Hazard names the first thing in content that a terminal or a reader's
// eye would be deceived by: an escape sequence (ESC, or a C1 control such
// as CSI), a bidi embedding, override or isolate (the "Trojan Source"
// characters), or a character that renders as nothing inside the text. It
// returns "" for content with none. Carriage returns, form feeds and tabs,
// common in honest source files, are not hazards.
func Hazard(content []byte) string {
	for i := 0; i < len(content); {
		c := content[i]
		if c < utf8.RuneSelf {
			switch c {
			case 0x1b:
				return "an escape sequence (ESC)"
			case 0x07, 0x08:
				return fmt.Sprintf("control character ^%c", c+'@')
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(content[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			if c >= 0x80 && c <= 0x9f {
				return fmt.Sprintf("a raw C1 control byte 0x%02X", c)
			}
		case isC1(r):
			return fmt.Sprintf("C1 control <U+%04X>", r)
		case bidi(r):
			return fmt.Sprintf("bidi control <U+%04X>, which reorders how text reads", r)
		case r == 0xFEFF && i == 0:
			// A byte order mark at the start is ordinary.
		case Invisible(r) && r != 0x200D && r != 0x200C && (r < 0xFE00 || r > 0xFE0F):
			// Joiners and variation selectors shape emoji and scripts.
			return fmt.Sprintf("invisible character <U+%04X>", r)
		}
		i += n
	}
	return ""
}

// bidi reports the explicit directional formatting characters: embeddings,
// overrides, isolates and their terminators (CVE-2021-42574).
func bidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
}

// TextFile reports whether a file is meant to be read as text whatever
// bytes it holds: a script (it starts with "#!") or a name with a source or
// text extension. Such a file with a NUL byte is shown escaped, never as
// "binary", which would hide what runs.
func TextFile(name string, data []byte) bool {
	if len(data) >= 2 && data[0] == '#' && data[1] == '!' {
		return true
	}
	base := strings.ToLower(name)
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	switch base {
	case "makefile", "gnumakefile", "dockerfile", "jenkinsfile", ".envrc", ".bashrc", ".profile", ".gitattributes", ".gitmodules":
		return true
	}
	i := strings.LastIndexByte(base, '.')
	if i < 0 {
		return false
	}
	switch base[i+1:] {
	case "sh", "bash", "zsh", "fish", "ps1", "bat", "cmd", "py", "rb", "pl", "pm", "php", "js", "mjs", "cjs", "ts", "tsx", "jsx",
		"go", "rs", "c", "h", "cc", "cpp", "hpp", "java", "kt", "swift", "cs", "lua", "r", "sql", "md", "txt", "rst",
		"yml", "yaml", "json", "toml", "ini", "cfg", "conf", "xml", "html", "htm", "css", "mk", "cmake", "gradle", "tf", "nix", "env":
		return true
	}
	return false
}
