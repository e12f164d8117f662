package diffview

import (
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// chroma's lexers.Match tries every glob of every lexer on a name (some
// 650 globs, each also with 14 backup suffixes): about 3 ms a file, more
// than drawing a screen. lexIndex answers the same question from an
// index made once: the globs "*.ext" (nearly all) by their ext, the
// others tried as chroma tries them; the same order of preference
// (Filenames before AliasFilenames, then the lexers' Priority).
type lexIndex struct {
	bySuffix [2]map[string][]chroma.Lexer // "*.go" is bySuffix[tier][".go"]
	other    [2][]globLexer
}

type globLexer struct {
	glob string
	l    chroma.Lexer
}

// ignoredSuffixes are chroma's: a backup or template of a file is
// coloured as the file.
var ignoredSuffixes = []string{"~", ".bak", ".old", ".orig", ".dpkg-dist", ".dpkg-old", ".ucf-dist",
	".ucf-new", ".ucf-old", ".rpmnew", ".rpmorig", ".rpmsave", ".in"}

var (
	lexIndexOnce sync.Once
	theLexIndex  *lexIndex
)

func globalLexIndex() *lexIndex {
	lexIndexOnce.Do(func() {
		ix := &lexIndex{bySuffix: [2]map[string][]chroma.Lexer{{}, {}}}
		for _, l := range lexers.GlobalLexerRegistry.Lexers {
			c := l.Config()
			for tier, globs := range [2][]string{c.Filenames, c.AliasFilenames} {
				for _, g := range globs {
					if strings.HasPrefix(g, "*.") && !strings.ContainsAny(g[1:], `*?[\`) {
						ix.bySuffix[tier][g[1:]] = append(ix.bySuffix[tier][g[1:]], l)
					} else {
						ix.other[tier] = append(ix.other[tier], globLexer{g, l})
					}
				}
			}
		}
		theLexIndex = ix
	})
	return theLexIndex
}

// match is the lexer chroma's lexers.Match gives for path, nil for none.
func (ix *lexIndex) match(path string) chroma.Lexer {
	name := filepath.Base(path)
	for tier := range 2 {
		var found chroma.PrioritisedLexers
		for _, n := range append([]string{name}, strippedNames(name)...) {
			for i := 0; i < len(n); i++ {
				if n[i] == '.' {
					found = append(found, ix.bySuffix[tier][n[i:]]...)
				}
			}
			for _, g := range ix.other[tier] {
				if ok, err := filepath.Match(g.glob, n); err == nil && ok {
					found = append(found, g.l)
				}
			}
		}
		if len(found) > 0 {
			sort.Sort(found)
			return found[0]
		}
	}
	return nil
}

// strippedNames is name less each backup suffix it ends with.
func strippedNames(name string) []string {
	var out []string
	for _, s := range ignoredSuffixes {
		if n, ok := strings.CutSuffix(name, s); ok && n != "" {
			out = append(out, n)
		}
	}
	return out
}
