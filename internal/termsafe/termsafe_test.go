package termsafe

import (
	"strings"
	"testing"
)

func TestLineAndText(t *testing.T) {
	for _, tc := range []struct {
		name, in, line, text string
	}{
		{"plain", "report.md", "report.md", "report.md"},
		{"unicode kept", "café/日本.md", "café/日本.md", "café/日本.md"},
		{"clear screen", "a\x1b[2J\x1b[Hb", "a^[[2J^[[Hb", "a^[[2J^[[Hb"},
		{"osc 52 clipboard", "x\x1b]52;c;ZWNobyBwd25lZA==\x07y", "x^[]52;c;ZWNobyBwd25lZA==^Gy", "x^[]52;c;ZWNobyBwd25lZA==^Gy"},
		{"hidden text", "\x1b[8mhidden\x1b[m", "^[[8mhidden^[[m", "^[[8mhidden^[[m"},
		{"newline and tab", "a\nb\tc", "a^Jb^Ic", "a\nb\tc"},
		{"carriage return", "ok\rfake", "ok^Mfake", "ok^Mfake"},
		{"nul and del", "a\x00b\x7f", "a^@b^?", "a^@b^?"},
		{"c1 csi as utf-8", "a\u009b2Jb", "a<U+009B>2Jb", "a<U+009B>2Jb"},
		{"raw c1 byte", "a\x9b2Jb", "a<0x9B>2Jb", "a<0x9B>2Jb"},
		{"bidi override", "invoice\u202Efdp.exe", "invoice<U+202E>fdp.exe", "invoice<U+202E>fdp.exe"},
		{"isolate", "\u2066x\u2069", "<U+2066>x<U+2069>", "<U+2066>x<U+2069>"},
		{"zero width space", "pay\u200Bpal", "pay<U+200B>pal", "pay<U+200B>pal"},
		{"byte order mark", "\uFEFFx", "<U+FEFF>x", "<U+FEFF>x"},
		{"line separator", "a\u2028b", "a<U+2028>b", "a<U+2028>b"},
		{"truncated utf-8", "a\xe2\x80", "a<0xE2><0x80>", "a<0xE2><0x80>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.in); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got := Text(tc.in); got != tc.text {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
			}
			if Clean(tc.in) != (tc.in == tc.line) {
				t.Errorf("Clean(%q) = %v", tc.in, Clean(tc.in))
			}
			for _, out := range []string{Line(tc.in), Text(tc.in)} {
				if strings.ContainsAny(out, "\x1b\x00\x07\r\u009b\u202e") {
					t.Errorf("output %q still holds a character a terminal interprets", out)
				}
			}
		})
	}
}

func TestMarked(t *testing.T) {
	got := Marked("a\x1bb\u202Ec", false, func(s string) string { return "[" + s + "]" })
	if want := "a[^[]b[<U+202E>]c"; got != want {
		t.Fatalf("Marked = %q, want %q", got, want)
	}
}

func TestHazard(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		hazard   bool
	}{
		{"plain source", "package main\n\nfunc main() {}\n", false},
		{"crlf and form feed", "a\r\n\fb\t\r\n", false},
		{"leading bom", "\uFEFFhello", false},
		{"emoji joiner", "\U0001F468\u200D\U0001F469", false},
		{"variation selector", "\u2764\uFE0F", false},
		{"latin-1 bytes", "caf\xe9", false},
		{"escape", "x\x1b[8m", true},
		{"bell", "x\x07", true},
		{"backspace overstrike", "a\bb", true},
		{"c1 csi", "\u009b31m", true},
		{"raw csi byte", "a\x9b31m", true},
		{"trojan source", "if (isAdmin) { /* \u202E } \u2066 */", true},
		{"zero width space", "pass\u200Bword", true},
		{"bom inside", "a\uFEFFb", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Hazard([]byte(tc.in)); (got != "") != tc.hazard {
				t.Errorf("Hazard(%q) = %q, want hazard=%v", tc.in, got, tc.hazard)
			}
		})
	}
}

func BenchmarkTextClean(b *testing.B) {
	s := strings.Repeat("+\tfmt.Println(\"hello, world\")\n", 1<<15)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Text(s)
	}
}
