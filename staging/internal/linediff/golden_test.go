package linediff

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "regenerate the golden files in testdata/golden from git")

// TestGolden diffs the curated cases in testdata/golden/<case>/{a,b} and
// compares with the expected output stored next to them, which was made by
// git (go test -update regenerates it with the installed git):
//
//	want        hunks of git diff --no-index a b, header lines removed
//	want.color  the same with --color=always
//	numstat     "added deleted" from git diff --numstat
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "golden", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no golden cases")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			a := readFile(t, filepath.Join(dir, "a"))
			b := readFile(t, filepath.Join(dir, "b"))
			if *update {
				tmp := t.TempDir()
				writeFile(t, filepath.Join(dir, "want"), gitHunks(t, tmp, a, b, false))
				writeFile(t, filepath.Join(dir, "want.color"), gitHunks(t, tmp, a, b, true))
				st := gitNumstat(t, tmp, a, b)
				writeFile(t, filepath.Join(dir, "numstat"), []byte(fmt.Sprintf("%d %d\n", st.Added, st.Deleted)))
			}
			for _, color := range []bool{false, true} {
				name := "want"
				if color {
					name = "want.color"
				}
				want := readFile(t, filepath.Join(dir, name))
				var got bytes.Buffer
				st, err := Hunks(&got, a, b, Options{Color: color})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Errorf("%s differs\n--- got\n%q\n--- want\n%q", name, got.Bytes(), want)
				}
				var wantSt Stats
				if _, err := fmt.Sscanf(string(readFile(t, filepath.Join(dir, "numstat"))), "%d %d", &wantSt.Added, &wantSt.Deleted); err != nil {
					t.Fatal(err)
				}
				if st != wantSt {
					t.Errorf("stats %+v, want %+v", st, wantSt)
				}
				if c := Count(a, b); c != wantSt {
					t.Errorf("Count %+v, want %+v", c, wantSt)
				}
			}
		})
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
