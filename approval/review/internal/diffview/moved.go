package diffview

import (
	"strconv"
	"strings"
)

// movedLine reads a rename's or copy's header lines ("rename from P",
// "rename to P", "copy from", "copy to", as git prints them, P quoted
// when git quotes it) into f: its path is the new one, from the old.
// It reports whether line was one of them.
func movedLine(line string, f *diffFile) bool {
	for _, verb := range []string{"rename", "copy"} {
		if p, ok := strings.CutPrefix(line, verb+" from "); ok {
			f.from = unquoteName(p)
			return true
		}
		if p, ok := strings.CutPrefix(line, verb+" to "); ok {
			f.path = unquoteName(p)
			return true
		}
	}
	return false
}

func unquoteName(p string) string {
	if strings.HasPrefix(p, `"`) {
		if u, err := strconv.Unquote(p); err == nil {
			return u
		}
	}
	return p
}
