package gittools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/glob"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/search"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/staging"
)

const (
	readPageLines = 2000
	readPageBytes = 64 << 10
	listMax       = 1000
)

type readArgs struct {
	Path      string `json:"path" jsonschema:"the file, relative to the workspace root"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to read (1-based); default 1"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to read; default: a page of 2000 lines"`
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"the file, relative to the workspace root; parent directories are created"`
	Content string `json:"content" jsonschema:"the whole new content of the file"`
}

type editArgs struct {
	Path    string `json:"path" jsonschema:"the file to edit"`
	OldText string `json:"old_text,omitempty" jsonschema:"text that occurs exactly once in the file, with enough surrounding lines to be unique"`
	NewText string `json:"new_text,omitempty" jsonschema:"what replaces it"`
	// The shape of the reference MCP filesystem server's edit_file, which
	// agents are trained on: several edits, applied in order, all or none.
	Edits  []editOp `json:"edits,omitempty" jsonschema:"instead of old_text/new_text: edits applied in order, each oldText occurring exactly once; all apply or none"`
	DryRun bool     `json:"dryRun,omitempty" jsonschema:"show the diff the edits would make without making them"`
}

type editOp struct {
	OldText string `json:"oldText" jsonschema:"text that occurs exactly once in the file (after the edits before it)"`
	NewText string `json:"newText" jsonschema:"what replaces it"`
}

type listArgs struct {
	Path      string `json:"path,omitempty" jsonschema:"the directory to list; default: the workspace root"`
	Pattern   string `json:"pattern,omitempty" jsonschema:"a glob on names, such as *.go; with recursive, on paths below the directory, where ** matches any number of directories"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"list everything below the directory, not just its entries"`
}

type searchArgs struct {
	Pattern    string `json:"pattern" jsonschema:"a regular expression (Go syntax), matched line by line"`
	Path       string `json:"path,omitempty" jsonschema:"the directory or file to search; default: the workspace root"`
	Glob       string `json:"glob,omitempty" jsonschema:"only files whose name matches this glob, such as *.md"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"how many matching lines to return at most; default 100, at most 1000"`
}

type deleteArgs struct {
	Path      string `json:"path" jsonschema:"the file, symlink or directory to delete"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"delete a directory with everything in it"`
}

type moveArgs struct {
	Source      string `json:"source" jsonschema:"what to move"`
	Destination string `json:"destination" jsonschema:"where it goes; parent directories are created"`
}

func fileTools() []Tool {
	return []Tool{
		define("read_file", "Read a text file of the sandbox workspace. Large files come a page (2000 lines) at a time: "+
			"the answer says which lines it holds and how to ask for the next ones with start_line/end_line.", readFile),
		define("write_file", "Create a file, or replace a file's whole content, in the sandbox workspace. Nothing leaves the "+
			"sandbox until git_stage and an approved git_push. Returns the size written.", writeFile),
		define("edit_file", "Replace one exact piece of text in a file. old_text must occur exactly once: if it occurs "+
			"several times or not at all, nothing changes and the answer says where it does occur. Returns the change as a diff.", editFile),
		define("list_files", "List a directory of the workspace (directories end in /, symlinks show their target, files "+
			"their size). With recursive, everything below it; pattern filters by glob.", listFiles),
		define("search_files", "Search file contents with a regular expression. Returns path:line: text for each matching "+
			"line, at most max_results.", searchFiles),
		define("delete_file", "Delete a file or symlink, or an empty directory (a full one with recursive).", deleteFile),
		define("move_file", "Move or rename a file or directory within the workspace.", moveFile),
	}
}

func readFile(_ context.Context, s *session.Session, a readArgs, _ Progress) (string, error) {
	data, err := s.Workspace().ReadFile(a.Path)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", &ToolError{Msg: fmt.Sprintf("%s is binary (%d bytes); read_file shows text files only", a.Path, len(data))}
	}
	if len(data) == 0 {
		return fmt.Sprintf("(%s is empty)", a.Path), nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start, end := a.StartLine, a.EndLine
	if start <= 0 {
		start = 1
	}
	if start > len(lines) {
		return "", &ToolError{Msg: fmt.Sprintf("%s has %d lines; start_line %d is past the end", a.Path, len(lines), start)}
	}
	if end <= 0 || end > len(lines) {
		end = len(lines)
	}
	if end < start {
		return "", &ToolError{Msg: fmt.Sprintf("end_line %d is before start_line %d", end, start)}
	}
	// One page at most, by lines and by bytes.
	var b strings.Builder
	last := start - 1
	for i := start - 1; i < end && i-(start-1) < readPageLines; i++ {
		if b.Len()+len(lines[i]) > readPageBytes && i > start-1 {
			break
		}
		b.WriteString(lines[i])
		last = i + 1
	}
	out := b.String()
	if start == 1 && last == len(lines) {
		return out, nil
	}
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	note := fmt.Sprintf("[lines %d-%d of %d", start, last, len(lines))
	if last < len(lines) {
		note += fmt.Sprintf("; read on with start_line=%d", last+1)
	}
	return out + note + "]", nil
}

func writeFile(_ context.Context, s *session.Session, a writeArgs, _ Progress) (string, error) {
	_, statErr := s.Workspace().Lstat(a.Path)
	if err := s.Workspace().WriteFile(a.Path, []byte(a.Content), 0o644); err != nil {
		return "", err
	}
	verb := "created"
	if statErr == nil {
		verb = "wrote"
	}
	return fmt.Sprintf("%s %s (%s)", verb, a.Path, bytesize.Format(int64(len(a.Content)))), nil
}

func editFile(_ context.Context, s *session.Session, a editArgs, _ Progress) (string, error) {
	ops := a.Edits
	switch {
	case len(ops) > 0 && (a.OldText != "" || a.NewText != ""):
		return "", &ToolError{Msg: "give either old_text/new_text or edits, not both; nothing changed"}
	case len(ops) == 0:
		if a.OldText == "" {
			return "", &ToolError{Msg: "old_text is empty; give the exact text to replace, or edits: [{oldText, newText}] (use write_file to write a whole file)"}
		}
		ops = []editOp{{OldText: a.OldText, NewText: a.NewText}}
	}
	apply := func(old []byte) ([]byte, error) {
		cur := old
		for i, op := range ops {
			what := "old_text"
			if len(a.Edits) > 0 {
				what = fmt.Sprintf("edits[%d].oldText", i)
			}
			if op.OldText == "" {
				return nil, &ToolError{Msg: fmt.Sprintf("%s is empty; give the exact text to replace; nothing changed", what)}
			}
			switch n := bytes.Count(cur, []byte(op.OldText)); {
			case n == 0:
				return nil, &ToolError{Msg: fmt.Sprintf("%s does not occur in %s; nothing changed. Read the file again: the text must match exactly, spaces and line breaks included", what, a.Path)}
			case n > 1:
				return nil, &ToolError{Msg: fmt.Sprintf("%s occurs %d times in %s (at lines %s); nothing changed. Include more surrounding text so it matches once",
					what, n, a.Path, occurrences(cur, []byte(op.OldText)))}
			}
			cur = bytes.Replace(cur, []byte(op.OldText), []byte(op.NewText), 1)
		}
		return cur, nil
	}
	var before, after []byte
	var err error
	if a.DryRun {
		if before, err = s.Workspace().ReadFile(a.Path); err == nil {
			after, err = apply(before)
		}
	} else {
		err = s.Workspace().Edit(a.Path, func(old []byte) ([]byte, error) {
			before = old
			after, err = apply(old)
			return after, err
		})
	}
	if err != nil {
		return "", err
	}
	hunks, added, deleted := staging.TextDiff(before, after)
	verb := "edited"
	if a.DryRun {
		verb = "would edit (dry run, nothing changed)"
	}
	return fmt.Sprintf("%s %s (+%d -%d)\n%s", verb, a.Path, added, deleted, capText(hunks, 8<<10, "the rest of the diff: git_diff")), nil
}

// occurrences lists the lines where sub starts in data.
func occurrences(data, sub []byte) string {
	var lines []string
	off := 0
	for len(lines) < 10 {
		i := bytes.Index(data[off:], sub)
		if i < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(bytes.Count(data[:off+i], []byte("\n"))+1))
		off += i + 1
	}
	return strings.Join(lines, ", ")
}

func listFiles(_ context.Context, s *session.Session, a listArgs, _ Progress) (string, error) {
	dir := a.Path
	if dir == "" || dir == "/" {
		dir = "."
	}
	g, err := compileGlob("pattern", a.Pattern)
	if err != nil {
		return "", err
	}
	fi, err := s.Workspace().Stat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return entryLine(s, dir, fi), nil
	}
	var out []string
	more := 0
	var walk func(d, rel string) error
	walk = func(d, rel string) error {
		ents, err := s.Workspace().ReadDir(d)
		if err != nil {
			return err
		}
		for _, e := range ents {
			full := e.Name()
			if d != "." {
				full = d + "/" + e.Name()
			}
			r := e.Name()
			if rel != "" {
				r = rel + "/" + e.Name()
			}
			if matchGlob(g, r, e.Name(), a.Recursive) {
				if len(out) < listMax {
					info, _ := e.Info()
					out = append(out, entryLine(s, r, info))
				} else {
					more++
				}
			}
			if a.Recursive && e.IsDir() {
				if err := walk(full, r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dir, ""); err != nil {
		return "", err
	}
	if len(out) == 0 {
		return fmt.Sprintf("(nothing in %s matches)", dir), nil
	}
	res := strings.Join(out, "\n")
	if more > 0 {
		res += fmt.Sprintf("\n[%d more entries not shown; narrow the listing with path or pattern]", more)
	}
	return res, nil
}

// matchGlob is search's: list_files and search_files match globs alike.
var matchGlob = search.MatchGlob

// compileGlob compiles a pattern the worker gave; "" is no pattern.
func compileGlob(what, pattern string) (*glob.Pattern, error) {
	g, err := search.CompileGlob(what, pattern)
	return g, queryError(err)
}

// queryError is search's error about the worker's query as a *ToolError.
func queryError(err error) error {
	var qe *search.QueryError
	if errors.As(err, &qe) {
		return &ToolError{Msg: qe.Msg}
	}
	return err
}

func searchFiles(_ context.Context, s *session.Session, a searchArgs, _ Progress) (string, error) {
	out, err := search.Workspace(s.Workspace(), search.Query(a))
	return out, queryError(err)
}

func entryLine(s *session.Session, p string, fi fs.FileInfo) string {
	switch {
	case fi == nil:
		return p
	case fi.IsDir():
		return p + "/"
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := s.Workspace().Readlink(p)
		return p + " -> " + target
	case fi.Mode()&0o100 != 0:
		return fmt.Sprintf("%s* (%s)", p, bytesize.Format(fi.Size()))
	}
	return fmt.Sprintf("%s (%s)", p, bytesize.Format(fi.Size()))
}

func deleteFile(_ context.Context, s *session.Session, a deleteArgs, _ Progress) (string, error) {
	// The strict guard first: deleting is no place for "." or "dir/".
	if _, err := pathguard.CheckPath(a.Path); err != nil {
		return "", err
	}
	fi, err := s.Workspace().Lstat(a.Path)
	if err != nil {
		return "", err
	}
	if fi.IsDir() && !a.Recursive {
		ents, _ := s.Workspace().ReadDir(a.Path)
		if len(ents) > 0 {
			return "", &ToolError{Msg: fmt.Sprintf("%s is a directory with %d entries; pass recursive: true to delete it with everything in it", a.Path, len(ents))}
		}
	}
	if a.Recursive {
		err = s.Workspace().RemoveAll(a.Path)
	} else {
		err = s.Workspace().Remove(a.Path)
	}
	if err != nil {
		return "", err
	}
	return "deleted " + a.Path, nil
}

func moveFile(_ context.Context, s *session.Session, a moveArgs, _ Progress) (string, error) {
	if err := s.Workspace().Rename(a.Source, a.Destination); err != nil {
		return "", err
	}
	return fmt.Sprintf("moved %s to %s", a.Source, a.Destination), nil
}

// capText cuts text over max bytes at a line boundary, with a note.
func capText(text string, max int, hint string) string {
	if len(text) <= max {
		return text
	}
	cut := strings.LastIndexByte(text[:max], '\n') + 1
	if cut <= 0 {
		cut = max
	}
	rest := strings.Count(text[cut:], "\n")
	return text[:cut] + fmt.Sprintf("[cut: %d more lines (%s); %s]", rest, bytesize.Format(int64(len(text)-cut)), hint)
}
