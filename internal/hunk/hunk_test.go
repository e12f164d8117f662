package hunk

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const twoHunks = "diff --git a/f b/f\nindex 1111111..2222222 100644\n--- a/f\n+++ b/f\n" +
	"@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n" +
	"@@ -8,3 +8,4 @@ func main() {\n h\n i\n+@@ -1 +1 @@\n j\n"

func TestSplit(t *testing.T) {
	tests := []struct {
		name, diff, header string
		hunks              []string
		err                bool
	}{
		{name: "two hunks, one adding a line that reads as a header", diff: twoHunks,
			header: "diff --git a/f b/f\nindex 1111111..2222222 100644\n--- a/f\n+++ b/f\n",
			hunks:  []string{"@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n", "@@ -8,3 +8,4 @@ func main() {\n h\n i\n+@@ -1 +1 @@\n j\n"}},
		{name: "binary: all header", diff: "diff --git a/x b/x\nindex 1..2 100644\nBinary files a/x and b/x differ\n",
			header: "diff --git a/x b/x\nindex 1..2 100644\nBinary files a/x and b/x differ\n"},
		{name: "no newline at the end", diff: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n",
			header: "diff --git a/f b/f\n--- a/f\n+++ b/f\n", hunks: []string{"@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"}},
		{name: "short hunk", diff: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n", err: true},
		{name: "long hunk", diff: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n a\n b\n", err: true},
		{name: "bad header", diff: "--- a/f\n+++ b/f\n@@ -x +1 @@\n a\n", err: true},
		{name: "bad line", diff: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n*a\n", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, hunks, err := Split(tt.diff)
			if tt.err {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Split: err %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil || h != tt.header || !reflect.DeepEqual(hunks, tt.hunks) {
				t.Fatalf("Split = %q, %q, %v; want %q, %q", h, hunks, err, tt.header, tt.hunks)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	got, err := Changed("@@ -1,4 +1,3 @@\n a\n-b\n+B\n c\n-d\n")
	want := []string{"-b", "+B", "-d"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Changed = %q, %v; want %q", got, err, want)
	}
}

func TestSelect(t *testing.T) {
	const h = "@@ -2,4 +2,5 @@ fn\n a\n-b\n-c\n+B\n+C\n+D\n d\n"
	tests := []struct {
		name, hunk string
		lines      []int
		want, err  string
	}{
		{name: "all", hunk: h, lines: []int{0, 1, 2, 3, 4}, want: h},
		{name: "one removal: the other stays", hunk: h, lines: []int{0},
			want: "@@ -2,4 +2,3 @@ fn\n a\n-b\n c\n d\n"},
		{name: "one addition", hunk: h, lines: []int{3},
			want: "@@ -2,4 +2,5 @@ fn\n a\n b\n c\n+C\n d\n"},
		{name: "order does not matter", hunk: h, lines: []int{4, 1},
			want: "@@ -2,4 +2,4 @@ fn\n a\n b\n-c\n+D\n d\n"},
		{name: "nothing", hunk: h, lines: nil, err: "no changed line selected"},
		{name: "out of range", hunk: h, lines: []int{5}, err: "line 5 is not a changed line"},
		{name: "twice", hunk: h, lines: []int{1, 1}, err: "selected twice"},
		{name: "a new file's lines", hunk: "@@ -0,0 +1,3 @@\n+a\n+b\n+c\n", lines: []int{0, 2},
			want: "@@ -0,0 +1,2 @@\n+a\n+c\n"},
		{name: "a deleted file's line: the rest stays", hunk: "@@ -1,3 +0,0 @@\n-a\n-b\n-c\n", lines: []int{1},
			want: "@@ -1,3 +1,2 @@\n a\n-b\n c\n"},
		{name: "no newline: the last line's removal left out",
			hunk:  "@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n",
			lines: []int{2},
			want:  "@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n"},
		{name: "no newline: only the removal",
			hunk:  "@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n",
			lines: []int{0},
			want:  "@@ -1,2 +1 @@\n a\n-b\n\\ No newline at end of file\n"},
		{name: "no newline: the added last line left out",
			hunk:  "@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n",
			lines: []int{0, 1},
			want:  "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.hunk, tt.lines)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Select: err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Select = %q, %v\nwant      %q", got, err, tt.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	const old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	first := "@@ -1,4 +1,5 @@\n 1\n+1a\n 2\n 3\n 4\n"
	last := "@@ -9,4 +10,3 @@\n 9\n 10\n-11\n 12\n"
	tests := []struct {
		name, old string
		hunks     []string
		want, err string
	}{
		{name: "both", old: old, hunks: []string{first, last}, want: "1\n1a\n2\n3\n4\n5\n6\n7\n8\n9\n10\n12\n"},
		{name: "the second alone, shifted", old: old, hunks: []string{last}, want: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n12\n"},
		{name: "repeated lines: placed by the earlier hunks' shift", old: strings.Repeat("a\nb\nc\n", 4),
			hunks: []string{"@@ -1,3 +1,6 @@\n a\n+1\n+2\n+3\n b\n c\n", "@@ -7,3 +10,3 @@\n a\n-b\n+B\n c\n"},
			want:  "a\n1\n2\n3\nb\nc\na\nb\nc\na\nB\nc\na\nb\nc\n"},
		{name: "on a file with lines added above", old: "0\n" + old, hunks: []string{"@@ -5,3 +5,3 @@\n 5\n-6\n+six\n 7\n"},
			want: "0\n1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n11\n12\n"},
		{name: "context differs", old: strings.Replace(old, "10\n", "ten\n", 1), hunks: []string{first, last},
			err: "hunk 1 (@@ -9,4 +10,3 @@) does not apply"},
		{name: "start of file is pinned", old: "0\n" + old, hunks: []string{first}, err: "hunk 0"},
		{name: "end of file is pinned", old: old + "13\n", hunks: []string{"@@ -11,2 +11 @@\n 11\n-12\n"}, err: "hunk 0"},
		{name: "new file", old: "", hunks: []string{"@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"}, want: "a\nb"},
		{name: "new file onto a file", old: "x\n", hunks: []string{"@@ -0,0 +1 @@\n+a\n"}, err: "hunk 0"},
		{name: "deletion", old: "a\nb", hunks: []string{"@@ -1,2 +0,0 @@\n-a\n-b\n\\ No newline at end of file\n"}, want: ""},
		{name: "no newline must be the end", old: "a\nb\n", hunks: []string{"@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"},
			err: "hunk 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Apply([]byte(tt.old), tt.hunks)
			if tt.err != "" {
				if !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Apply: err %v, want ErrNoMatch with %q", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Apply = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPick(t *testing.T) {
	hunks := []string{"@@ -1,2 +1,2 @@\n a\n-b\n+B\n", "@@ -9,2 +9,4 @@\n i\n+x\n+y\n j\n"}
	tests := []struct {
		name  string
		sel   []Selected
		texts []string
		index []int
		err   string
	}{
		{name: "in the file's order", sel: []Selected{{Index: 1, Lines: []int{1}}, {Index: 0}},
			texts: []string{hunks[0], "@@ -9,2 +9,3 @@\n i\n+y\n j\n"}, index: []int{0, 1}},
		{name: "out of range", sel: []Selected{{Index: 2}}, err: "there is no hunk 2"},
		{name: "twice", sel: []Selected{{Index: 1}, {Index: 1, Lines: []int{0}}}, err: "hunk 1 is selected twice"},
		{name: "bad line", sel: []Selected{{Index: 0, Lines: []int{7}}}, err: "hunk 0: line 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texts, index, err := Pick(hunks, tt.sel)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Pick: err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(texts, tt.texts) || !reflect.DeepEqual(index, tt.index) {
				t.Fatalf("Pick = %q, %v, %v", texts, index, err)
			}
		})
	}
}
