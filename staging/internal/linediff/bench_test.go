package linediff

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// synthCode returns about size bytes of Go-like source: functions with
// nested blocks, comments and blank lines, so that many lines repeat
// ("}", "", "return nil", ...) as in real code.
func synthCode(r *rand.Rand, size int) []byte {
	var buf bytes.Buffer
	idents := []string{"x", "err", "buf", "n", "ctx", "req", "resp", "item", "key", "val"}
	id := func() string { return idents[r.Intn(len(idents))] }
	var stmt func(depth int)
	stmt = func(depth int) {
		ind := strings.Repeat("\t", depth)
		switch r.Intn(10) {
		case 0, 1:
			fmt.Fprintf(&buf, "%sif %s != nil {\n", ind, id())
			for k := r.Intn(3) + 1; k > 0; k-- {
				stmt(depth + 1)
			}
			fmt.Fprintf(&buf, "%s}\n", ind)
		case 2:
			fmt.Fprintf(&buf, "%sfor _, %s := range %s {\n", ind, id(), id())
			for k := r.Intn(3) + 1; k > 0; k-- {
				stmt(depth + 1)
			}
			fmt.Fprintf(&buf, "%s}\n", ind)
		case 3:
			fmt.Fprintf(&buf, "%sreturn nil\n", ind)
		case 4:
			fmt.Fprintf(&buf, "%s// %s holds the %s of %s %d.\n", ind, id(), id(), id(), r.Intn(1000))
		case 5:
			buf.WriteString("\n")
		default:
			fmt.Fprintf(&buf, "%s%s := %s(%s, %d)\n", ind, id(), id(), id(), r.Intn(100000))
		}
	}
	for f := 0; buf.Len() < size; f++ {
		fmt.Fprintf(&buf, "// F%d does things with %s.\nfunc F%d(%s int) error {\n", f, id(), f, id())
		for k := r.Intn(12) + 2; k > 0; k-- {
			stmt(1)
		}
		buf.WriteString("\treturn nil\n}\n\n")
	}
	return buf.Bytes()
}

// editLines applies n random block edits to text.
func editLines(r *rand.Rand, text []byte, n int) []byte {
	lines := strings.SplitAfter(string(text), "\n")
	for ; n > 0; n-- {
		p := r.Intn(len(lines))
		k := r.Intn(8) + 1
		q := min(p+k, len(lines))
		switch r.Intn(3) {
		case 0:
			lines = append(lines[:p], lines[q:]...)
		case 1:
			ins := strings.SplitAfter(string(synthCode(r, 1)), "\n")
			ins = ins[:len(ins)-1]
			lines = append(lines[:p], append(ins, lines[p:]...)...)
		default:
			for i := p; i < q; i++ {
				lines[i] = strings.Replace(lines[i], "err", "e2", 1)
				if r.Intn(3) == 0 {
					lines[i] = "\t// changed\n"
				}
			}
		}
	}
	return []byte(strings.Join(lines, ""))
}

const benchSize = 5 << 20

func benchInputs() (a, edited, rewritten []byte) {
	a = synthCode(rand.New(rand.NewSource(1)), benchSize)
	edited = editLines(rand.New(rand.NewSource(2)), a, 300)
	rewritten = synthCode(rand.New(rand.NewSource(3)), benchSize)
	return
}

func BenchmarkEdit5MB(b *testing.B) {
	a, edited, _ := benchInputs()
	benchPair(b, a, edited)
}

func BenchmarkRewrite5MB(b *testing.B) {
	a, _, rewritten := benchInputs()
	benchPair(b, a, rewritten)
}

// benchPair measures Hunks and, as a peer, git diff --no-index on the same
// two files (process start-up included).
func benchPair(b *testing.B, x, y []byte) {
	b.Run("linediff", func(b *testing.B) {
		b.SetBytes(int64(len(x) + len(y)))
		for i := 0; i < b.N; i++ {
			if _, err := Hunks(io.Discard, x, y, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("git", func(b *testing.B) {
		git, err := exec.LookPath("git")
		if err != nil {
			b.Skip("git is not installed")
		}
		dir := b.TempDir()
		writePair(b, dir, x, y)
		b.SetBytes(int64(len(x) + len(y)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(git, append(append([]string(nil), gitDiffArgs...), "--no-color", "a", "b")...)
			cmd.Dir = dir
			cmd.Env = gitEnv()
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestLargeAgainstGit compares the 5 MB benchmark cases with git.
func TestLargeAgainstGit(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	needGit(t)
	a, edited, rewritten := benchInputs()
	for _, c := range []struct {
		name string
		b    []byte
	}{{"edit", edited}, {"rewrite", rewritten}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			want := gitHunks(t, dir, a, c.b, false)
			var got bytes.Buffer
			if _, err := Hunks(&got, a, c.b, Options{}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				os.WriteFile(filepath.Join(os.TempDir(), "linediff-"+c.name+".ours"), got.Bytes(), 0o644)
				os.WriteFile(filepath.Join(os.TempDir(), "linediff-"+c.name+".git"), want, 0o644)
				t.Errorf("output differs from git (%d vs %d bytes); see %s", got.Len(), len(want), os.TempDir())
			}
		})
	}
}
