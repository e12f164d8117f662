package hunk

import (
	"fmt"
	"sort"
)

// Selected names one hunk of a file's diff by its place among them (from
// 0) and, when Lines is not empty, the only changed lines of it kept (see
// Select).
type Selected struct {
	Index int
	Lines []int
}

// Pick returns the hunks sel names, in the file's order whatever sel's,
// each cut to its lines, and their places among hunks. A place out of
// range or named twice is an error.
func Pick(hunks []string, sel []Selected) (texts []string, index []int, err error) {
	sorted := append([]Selected(nil), sel...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	for i, h := range sorted {
		switch {
		case h.Index < 0 || h.Index >= len(hunks):
			return nil, nil, fmt.Errorf("there are %d hunks; there is no hunk %d", len(hunks), h.Index)
		case i > 0 && sorted[i-1].Index == h.Index:
			return nil, nil, fmt.Errorf("hunk %d is selected twice", h.Index)
		}
		text := hunks[h.Index]
		if len(h.Lines) > 0 {
			if text, err = Select(text, h.Lines); err != nil {
				return nil, nil, fmt.Errorf("hunk %d: %w", h.Index, err)
			}
		}
		texts, index = append(texts, text), append(index, h.Index)
	}
	return texts, index, nil
}
