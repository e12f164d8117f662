package search

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/glob"
	"github.com/airlock-dev/airlock/memfs"
)

// Workspace reads one snapshot of the workspace (frozen, so read without
// locks and without copying a file) and searches its files in parallel,
// then puts the answers back in path order. A line matches when the
// regular expression matches it alone, as if the file were split at '\n':
// ^ and $ anchor at the line's ends and nothing crosses a line. The
// regular expression runs only on lines that hold a literal every match
// needs (see plan), and not at all when that literal is the whole pattern.

// searchFile is one file to search.
type searchFile struct {
	path string // as the answer names it: below the path the worker gave
	e    memfs.Entry
	data []byte // e's content, read by the goroutine that searches it (a lazy base file is loaded there, in parallel); shared: never modified
}

// lineHit is a matching line: its number and where it is in the file.
type lineHit struct {
	num        int
	start, end int
}

// fileHits is what one file holds: how many lines match, and the first of
// them (only as many as the answer can show).
type fileHits struct {
	count int
	lines []lineHit
	err   error // the content could not be read
}

// batch is a run of files, consecutive in path order, that one goroutine
// searches.
type batch struct {
	seq   int // the batch's place in path order
	files []searchFile
	hits  []fileHits
}

// batchFiles: small enough to share the work evenly, large enough that
// handing batches over costs nothing next to searching them.
const batchFiles = 64

// Limits of an answer.
const (
	// DefaultResults is how many matching lines an answer shows when the
	// query does not say.
	DefaultResults = 100
	// MaxResults is the most matching lines an answer shows.
	MaxResults = 1000
	// lineMax is the most bytes of a line an answer shows.
	lineMax = 200
)

// Query is what the worker asks for, as it gave it.
type Query struct {
	Pattern    string // a regular expression (Go syntax), matched line by line
	Path       string // the directory or file to search; "": the workspace root
	Glob       string // only files whose name (or path below Path) matches; "": all
	MaxResults int    // matching lines to show; <= 0: DefaultResults, capped at MaxResults
}

// QueryError is a query the worker must change: what is wrong and what to
// ask instead.
type QueryError struct{ Msg string }

func (e *QueryError) Error() string { return e.Msg }

// Workspace answers q over ws's files as search_files does: path:line:
// text for each matching line, in path order, then a note of how many
// matched in all when not every one is shown. Errors in q are
// *QueryError; a path that does not resolve is the workspace's error.
func Workspace(ws *memfs.Workspace, a Query) (string, error) {
	q, err := a.query()
	if err != nil {
		return "", err
	}
	batches, err := searchTree(ws, q.root, q.glob, newPlan(q.re), q.max)
	if err != nil {
		return "", err
	}
	return formatHits(batches, q.max), nil
}

// searchQuery is a Query checked and with their defaults.
type searchQuery struct {
	glob *glob.Pattern
	re   *regexp.Regexp
	max  int
	root string
}

func (a Query) query() (searchQuery, error) {
	if a.Pattern == "" {
		return searchQuery{}, &QueryError{Msg: "pattern is empty; give a regular expression, e.g. \"func \\\\w+Handler\""}
	}
	if len(a.Pattern) > 1000 {
		return searchQuery{}, &QueryError{Msg: fmt.Sprintf("pattern is %d characters long, over the limit of 1000; search for a shorter, distinctive part of it", len(a.Pattern))}
	}
	g, err := CompileGlob("glob", a.Glob)
	if err != nil {
		return searchQuery{}, err
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return searchQuery{}, &QueryError{Msg: fmt.Sprintf("pattern is not a valid regular expression: %v", err)}
	}
	q := searchQuery{glob: g, re: re, max: a.MaxResults, root: a.Path}
	if q.max <= 0 {
		q.max = DefaultResults
	}
	q.max = min(q.max, MaxResults)
	if q.root == "" {
		q.root = "."
	}
	return q, nil
}

// searchTree searches the regular files at or below root (as the worker
// named it) in one snapshot, as the worker's view shows them: the path
// guard, the deny list, symlinks followed to the root but never below it
// (a symlink inside is skipped). This goroutine walks the snapshot and
// hands batches of files to GOMAXPROCS-1 others, then searches too: the
// walk overlaps the search. It returns the batches in path order.
func searchTree(ws *memfs.Workspace, root string, g *glob.Pattern, pl *plan, max int) ([]*batch, error) {
	// The io/fs view search_files used to walk refuses what fs.ValidPath
	// does ("src/", "./src") with this error; keep it.
	if !fs.ValidPath(root) {
		return nil, &fs.PathError{Op: "stat", Path: root, Err: fs.ErrInvalid}
	}
	snap := ws.Snapshot()
	canon, isDir, err := ws.ResolveIn(snap, root)
	if err != nil {
		return nil, err
	}
	c := &cutoff{max: max, from: -1}
	if !isDir {
		e, ok := snap.Lookup(canon)
		if !ok || !MatchGlob(g, "", path.Base(root), true) {
			return nil, nil
		}
		b := &batch{files: []searchFile{{path: root, e: e}}}
		c.search(b, pl)
		return []*batch{b}, nil
	}
	work := make(chan *batch, 64)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				c.search(b, pl)
			}
		}()
	}
	var batches []*batch
	cur := &batch{}
	send := func() {
		batches = append(batches, cur)
		c.add()
		select {
		case work <- cur:
		default:
			// The others are behind (or there are none): search it here.
			c.search(cur, pl)
		}
		cur = &batch{seq: len(batches)}
	}
	err = ws.WalkVisible(snap, canon, func(e memfs.Entry) error {
		if e.Mode&fs.ModeSymlink != 0 {
			return nil
		}
		rel := e.Path
		if canon != "" {
			rel = e.Path[len(canon)+1:]
		}
		if !MatchGlob(g, rel, path.Base(rel), true) {
			return nil
		}
		p := rel
		if root != "." {
			p = root + "/" + rel
		}
		cur.files = append(cur.files, searchFile{path: p, e: e})
		if len(cur.files) == batchFiles {
			send()
		}
		return nil
	})
	if len(cur.files) > 0 {
		send()
	}
	close(work)
	// Join the others on what is left.
	for b := range work {
		c.search(b, pl)
	}
	wg.Wait()
	return batches, err
}

// cutoff finds the first batch from which on no line needs keeping: the
// batches before it, all searched, hold max matching lines. The answer
// reports the total, so every file is still searched, but past the cutoff
// only counted.
type cutoff struct {
	max    int
	mu     sync.Mutex
	counts []int // each batch's matching lines; -1 until searched
	front  int   // batches [0, front) are all searched
	shown  int   // and hold this many matching lines
	from   int   // batches from here on need only counting; -1: not yet known
}

// add counts one more batch to be searched.
func (c *cutoff) add() {
	c.mu.Lock()
	c.counts = append(c.counts, -1)
	c.mu.Unlock()
}

// search searches b's files, keeping up to max lines of each unless b is
// past the cutoff.
func (c *cutoff) search(b *batch, pl *plan) {
	c.mu.Lock()
	keep := c.max
	if c.from >= 0 && b.seq >= c.from {
		keep = 0
	}
	c.mu.Unlock()
	b.hits = make([]fileHits, len(b.files))
	// The batch's lazy files are read together: streamed from a local
	// repository's git, asked for in one round trip from a remote one,
	// and kept in the cache, so that the next search reads memory.
	es := make([]memfs.Entry, len(b.files))
	at := make(map[string]int, len(b.files))
	for i := range b.files {
		es[i] = b.files[i].e
		at[es[i].Path] = i
	}
	var mu sync.Mutex
	n := 0
	memfs.LoadEach(context.Background(), es, true, func(e memfs.Entry, data []byte, err error) error {
		i := at[e.Path]
		if err != nil {
			b.hits[i].err = err
			return nil
		}
		h := searchOne(data, pl, keep)
		mu.Lock()
		b.files[i].data = data
		b.hits[i] = h
		n += h.count
		mu.Unlock()
		return nil
	})
	c.finished(b.seq, n)
}

// finished records batch i's count and moves the front past every batch
// searched so far.
func (c *cutoff) finished(i, count int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(c.counts) { // a lone file: no batches were added
		return
	}
	c.counts[i] = count
	for c.front < len(c.counts) && c.counts[c.front] >= 0 {
		c.shown += c.counts[c.front]
		c.front++
	}
	if c.shown >= c.max && c.from < 0 {
		c.from = c.front
	}
}

// searchOne finds the lines of data that match, keeping the first keep of
// them. A file with a NUL byte is binary and holds nothing.
func searchOne(data []byte, pl *plan, keep int) fileHits {
	var h fileHits
	binary := false
	num, counted := 1, 0 // line number of the line at counted
	pl.eachLine(data, func(start, end int) bool {
		if h.count == 0 && bytes.IndexByte(data, 0) >= 0 {
			binary = true
			return false
		}
		h.count++
		if len(h.lines) < keep {
			num += bytes.Count(data[counted:start], newline)
			counted = start
			h.lines = append(h.lines, lineHit{num: num, start: start, end: end})
		}
		return true
	})
	if binary {
		return fileHits{}
	}
	return h
}

var newline = []byte{'\n'}

// formatHits writes the answer exactly as search_files always has.
func formatHits(batches []*batch, max int) string {
	total, unread := 0, 0
	var firstErr error
	for _, b := range batches {
		for _, h := range b.hits {
			total += h.count
			if h.err != nil {
				if unread++; firstErr == nil {
					firstErr = h.err
				}
			}
		}
	}
	note := ""
	if unread > 0 {
		note = fmt.Sprintf("\n[%d file(s) could not be read and were not searched; the first: %v]", unread, firstErr)
	}
	if total == 0 {
		return "(no matches)" + note
	}
	var sb strings.Builder
	shown := 0
	for _, b := range batches {
		for i, h := range b.hits {
			for _, l := range h.lines {
				if shown == max {
					break
				}
				if shown > 0 {
					sb.WriteByte('\n')
				}
				line := b.files[i].data[l.start:l.end]
				sb.WriteString(b.files[i].path)
				sb.WriteByte(':')
				sb.WriteString(strconv.Itoa(l.num))
				sb.WriteString(": ")
				if len(line) > lineMax {
					sb.Write(line[:lineMax])
					sb.WriteString("...")
				} else {
					sb.Write(line)
				}
				shown++
			}
		}
	}
	if total > shown {
		fmt.Fprintf(&sb, "\n[%d matches in all, %d shown; raise max_results (up to %d) or narrow path, glob or pattern]", total, shown, MaxResults)
	}
	return sb.String() + note
}

// MatchGlob reports whether an entry at rel (relative to the listing's
// root), named name, is one the worker's pattern asks for: a pattern of one
// segment is matched against the name, as a shell would; any other against
// the whole relative path, "**" standing for any number of directories.
func MatchGlob(g *glob.Pattern, rel, name string, recursive bool) bool {
	switch {
	case g == nil:
		return true
	case !recursive || g.Single():
		return g.MatchName(name)
	}
	return g.Match(strings.Split(rel, "/"))
}

// CompileGlob compiles a pattern the worker gave as argument what; "" is
// no pattern. Its error is a *QueryError.
func CompileGlob(what, pattern string) (*glob.Pattern, error) {
	if pattern == "" {
		return nil, nil
	}
	g, err := glob.Compile(pattern)
	if err != nil {
		return nil, &QueryError{Msg: fmt.Sprintf("%s %.80q is not a usable glob (%v); use names and *, ?, [a-z] within a segment and ** for any number of directories, as in \"src/**/*.go\"", what, pattern, err)}
	}
	return g, nil
}
