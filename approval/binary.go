package approval

import (
	"bytes"
	"fmt"

	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// binaryCheckLen is how many leading bytes git looks in for a NUL to call
// content binary (xdiff's buffer_is_binary).
const binaryCheckLen = 8000

// BinaryKind is what binary content is, for the reviewer: its type as
// its leading bytes name it ("PNG image", "ELF executable"), "binary data"
// for content that is binary by git's rule alone, and "" for text; code
// says the format holds code a machine runs.
//
// Content is binary as git decides it (a NUL in its first 8,000 bytes) or
// when it starts with a common binary format's signature, which some
// formats (PDF, a gzip without a NUL in its header) carry without a NUL.
// A file a person reads as text by its name (a script, source, a config
// file: termsafe.TextFile) is text whatever its bytes: a script cannot
// hide from the checks of text behind a PNG signature.
func BinaryKind(name string, data []byte) (kind string, code bool) {
	if termsafe.TextFile(name, data) {
		return "", false
	}
	if s := signature(data); s != nil {
		return s.kind, s.code
	}
	head := data[:min(len(data), binaryCheckLen)]
	if bytes.IndexByte(head, 0) >= 0 {
		return "binary data", false
	}
	return "", false
}

// sig is one binary format's signature: magic at offset.
type sig struct {
	offset int
	magic  string
	kind   string
	code   bool // the format holds code a machine runs
}

// signatures are the common binary formats' leading bytes (as file(1)
// and the formats' specifications give them), longest first where one is
// the prefix of another.
var signatures = []sig{
	{0, "\x89PNG\r\n\x1a\n", "PNG image", false},
	{0, "\xff\xd8\xff", "JPEG image", false},
	{0, "GIF87a", "GIF image", false},
	{0, "GIF89a", "GIF image", false},
	{0, "II*\x00", "TIFF image", false},
	{0, "MM\x00*", "TIFF image", false},
	{0, "\x00\x00\x01\x00", "icon", false},
	{0, "%PDF-", "PDF document", false},
	{0, "PK\x03\x04", "zip archive (or jar, docx, xlsx, apk)", false},
	{0, "PK\x05\x06", "zip archive (or jar, docx, xlsx, apk)", false},
	{0, "\x1f\x8b", "gzip archive", false},
	{0, "BZh", "bzip2 archive", false},
	{0, "\xfd7zXZ\x00", "xz archive", false},
	{0, "(\xb5/\xfd", "zstd archive", false},
	{0, "7z\xbc\xaf\x27\x1c", "7-zip archive", false},
	{257, "ustar", "tar archive", false},
	{0, "SQLite format 3\x00", "SQLite database", false},
	{0, "wOFF", "WOFF font", false},
	{0, "wOF2", "WOFF2 font", false},
	{0, "OTTO", "OpenType font", false},
	{0, "OggS", "Ogg media", false},
	{0, "fLaC", "FLAC audio", false},
	{0, "ID3", "MP3 audio", false},
	{4, "ftyp", "MP4/QuickTime media", false},
	{0, "\x7fELF", "ELF executable", true},
	{0, "\xfe\xed\xfa\xce", "Mach-O executable", true},
	{0, "\xfe\xed\xfa\xcf", "Mach-O executable", true},
	{0, "\xce\xfa\xed\xfe", "Mach-O executable", true},
	{0, "\xcf\xfa\xed\xfe", "Mach-O executable", true},
	{0, "\xca\xfe\xba\xbe", "Java class or Mach-O universal executable", true},
	{0, "\x00asm", "WebAssembly module", true},
	{0, "dex\n", "Android DEX executable", true},
}

// signature is the format data starts with; nil for none. RIFF (WAV,
// AVI, WebP) and Windows PE executables are told by more than a prefix.
func signature(data []byte) *sig {
	for i := range signatures {
		s := &signatures[i]
		if len(data) >= s.offset+len(s.magic) && string(data[s.offset:s.offset+len(s.magic)]) == s.magic {
			return s
		}
	}
	switch {
	case len(data) >= 12 && string(data[:4]) == "RIFF":
		return &sig{kind: "RIFF media (" + termsafe.Line(string(data[8:12])) + ")"}
	case len(data) >= 64 && string(data[:2]) == "MZ":
		// A DOS header names the PE header's offset at 0x3c.
		off := int(data[60]) | int(data[61])<<8 | int(data[62])<<16 | int(data[63])<<24
		if off >= 0 && off+4 <= len(data) && string(data[off:off+4]) == "PE\x00\x00" {
			return &sig{kind: "Windows executable", code: true}
		}
	}
	return nil
}

// binaryFlags judges one file of binary content (kind, from BinaryKind):
// a byte-identical copy of a file the target already has is nothing new
// and raises no flag; new machine code is medium, as nobody can read what
// it does; other new binary content is low, as the diff cannot show it.
func binaryFlags(f FileChange, kind string, code bool) []Flag {
	if f.CopyOf != "" {
		return nil
	}
	what := fmt.Sprintf("%s, %s", kind, bytesize.Format(f.Size))
	if code {
		return []Flag{{Code: FlagBinary, Severity: Medium, Path: f.Path,
			Message: fmt.Sprintf("%s is machine code (%s), new to the repository: what it does cannot be read", f.Path, what)}}
	}
	return []Flag{{Code: FlagBinary, Severity: Low, Path: f.Path,
		Message: fmt.Sprintf("%s is binary (%s), new to the repository", f.Path, what)}}
}

// maskedText is what the checks of text read of content a binary
// signature names but git's rule does not (no NUL in its first 8,000
// bytes): the diff shows it as text, so a worker could put "GIF89a" in
// front of a key or a bidi override to hide them from those checks. Its
// bytes that are not UTF-8 (the signature's 0x89, a PDF's high-byte
// comment) are left out, as they are the format's own and no terminal
// reads them as controls; the newlines stay, so line numbers hold. nil
// for content git calls binary too: the diff cannot show it.
func maskedText(data []byte) []byte {
	if len(data) == 0 || bytes.IndexByte(data[:min(len(data), binaryCheckLen)], 0) >= 0 {
		return nil
	}
	return bytes.ToValidUTF8(data, nil)
}
