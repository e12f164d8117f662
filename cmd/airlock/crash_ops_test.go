//go:build unix

package main

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

func crashPick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func (r *crashRig) randomPath() string {
	return crashPick(r.rng, crashDirs) + crashPick(r.rng, crashNames)
}

// content is a few lines, each unique (edits find exactly one), or now and
// then one long line, which journal writes and restarts must carry too.
func (r *crashRig) content() string {
	if r.rng.IntN(40) == 0 {
		n := 64<<10 + r.rng.IntN(448<<10)
		b := make([]byte, n, n+1)
		for i := range b {
			b[i] = "ghijklmnopqrsuvwxyz"[r.rng.IntN(19)]
		}
		return string(append(b, '\n'))
	}
	var b strings.Builder
	for i := r.rng.IntN(10); i >= 0; i-- {
		fmt.Fprintf(&b, "line %s %s\n", crashPick(r.rng, crashWords), r.nextToken())
	}
	return b.String()
}

// randomOp picks a call that fits the state both sessions are in (the
// reference's, which the durable one equals); kinds, when given, are the
// ones to choose from.
func (r *crashRig) randomOp(kinds ...string) crashOp {
	files, dirs := r.refFiles()
	st := r.ref.s.Status()
	cps := r.ref.s.Checkpoints()
	if len(kinds) == 0 {
		kinds = []string{}
		for kind, weight := range map[string]int{
			"write_file": 18, "edit_file": 14, "delete_file": 6, "move_file": 6, "checkpoint": 7, "rollback": 6,
			"git_stage": 10, "git_discard": 4, "git_push": 8, "git_status": 2, "list_checkpoints": 2, "read_file": 2,
			"list_files": 1, "git_diff": 2, "git_pull": 1,
		} {
			for range weight {
				kinds = append(kinds, kind)
			}
		}
		sort.Strings(kinds) // the map's order is random; the seed's must not be
	}
	op := crashOp{name: crashPick(r.rng, kinds), commit: -1}
	staged := len(st.Staged)
	commitIndex := func() int {
		if staged == 0 || r.rng.IntN(2) == 0 {
			return -1
		}
		return r.rng.IntN(staged)
	}
	switch op.name {
	case "write_file":
		p := r.randomPath()
		if len(files) > 0 && r.rng.IntN(3) == 0 {
			p = crashPick(r.rng, files)
		}
		op.args = map[string]any{"path": p, "content": r.content()}
	case "edit_file":
		if len(files) == 0 {
			return r.randomOp("write_file")
		}
		p := crashPick(r.rng, files)
		data, _ := r.ref.s.Workspace().ReadFile(p)
		lines := strings.SplitAfter(string(data), "\n")
		var usable []string
		for _, l := range lines {
			if l = strings.TrimSuffix(l, "\n"); l != "" && len(l) < 1000 && strings.Count(string(data), l) == 1 {
				usable = append(usable, l)
			}
		}
		switch {
		case len(usable) == 0 || r.rng.IntN(20) == 0:
			// Text that is not there: refused, on both sides alike.
			op.args = map[string]any{"path": p, "old_text": "no such text " + r.nextToken(), "new_text": "x"}
		case len(usable) >= 2 && r.rng.IntN(4) == 0:
			i := r.rng.IntN(len(usable))
			j := (i + 1 + r.rng.IntN(len(usable)-1)) % len(usable)
			op.args = map[string]any{"path": p, "edits": []map[string]string{
				{"oldText": usable[i], "newText": "line edited " + r.nextToken()},
				{"oldText": usable[j], "newText": "line edited " + r.nextToken() + "\nline added " + r.nextToken()},
			}}
		default:
			op.args = map[string]any{"path": p, "old_text": crashPick(r.rng, usable), "new_text": "line edited " + r.nextToken()}
		}
	case "delete_file":
		switch {
		case len(dirs) > 0 && r.rng.IntN(4) == 0:
			op.args = map[string]any{"path": crashPick(r.rng, dirs), "recursive": true}
		case len(files) > 0:
			op.args = map[string]any{"path": crashPick(r.rng, files)}
		default:
			return r.randomOp("write_file")
		}
	case "move_file":
		switch {
		case len(dirs) > 0 && r.rng.IntN(5) == 0:
			op.args = map[string]any{"source": crashPick(r.rng, dirs), "destination": "moved-" + r.nextToken()}
		case len(files) > 0:
			op.args = map[string]any{"source": crashPick(r.rng, files), "destination": r.randomPath()}
		default:
			return r.randomOp("write_file")
		}
	case "checkpoint":
		op.args = map[string]any{}
		if r.rng.IntN(2) == 0 {
			op.args["name"] = "cp-" + r.nextToken()
		}
	case "rollback":
		op.args = map[string]any{}
		if len(cps) > 0 && r.rng.IntN(3) > 0 {
			op.args["name"] = crashPick(r.rng, cps).Name
		}
	case "git_stage":
		op.args = map[string]any{"message": "Commit " + r.nextToken()}
		if r.rng.IntN(3) == 0 {
			op.args["message"] = op.args["message"].(string) + "\n\nWith a body, " + r.nextToken() + "."
		}
		if len(st.Unstaged) > 0 && r.rng.IntN(3) == 0 {
			op.args["files"] = []string{crashPick(r.rng, st.Unstaged).Path}
		}
	case "git_discard":
		if op.commit = commitIndex(); op.commit < 0 {
			op.args = map[string]any{"all": true}
		}
	case "git_push":
		op.commit = commitIndex()
	case "read_file":
		if len(files) == 0 {
			return r.randomOp("write_file")
		}
		op.args = map[string]any{"path": crashPick(r.rng, files)}
	case "list_files":
		op.args = map[string]any{"recursive": true}
	case "git_diff":
		op.commit = commitIndex()
	}
	return op
}

var crashStagedLine = regexp.MustCompile(`(?m)^  ([0-9a-f]{7}) "`)

// stagedIDs reads the staged commits' ids from git_status.
func crashStagedIDs(status string) []string {
	var ids []string
	for _, m := range crashStagedLine.FindAllStringSubmatch(status, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// argsFor puts the side's own commit id in op's arguments.
func crashArgsFor(op crashOp, status func() string) map[string]any {
	args := map[string]any{}
	for k, v := range op.args {
		args[k] = v
	}
	if op.commit >= 0 {
		ids := crashStagedIDs(status())
		args["commit_id"] = "0000000" // no such commit: refused on both sides
		if op.commit < len(ids) {
			args["commit_id"] = ids[op.commit]
		}
	}
	return args
}

func (r *crashRig) durableStatus() string {
	out, _, err := r.srv.call("git_status", nil)
	if err != nil {
		r.fail("git_status: %v", err)
	}
	return out
}

func (r *crashRig) refStatus() string {
	out, _ := r.ref.call("git_status", nil)
	return out
}

// applyRef makes op's call on the reference.
func (r *crashRig) applyRef(op crashOp) (string, bool) {
	return r.ref.call(op.name, crashArgsFor(op, r.refStatus))
}

var (
	crashHex  = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	crashTime = regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`)
)

// normal is text with what differs between the two sessions for no fault
// of theirs taken out: commit ids, times of day, and where the targets
// are.
func (r *crashRig) normal(s string) string {
	s = strings.ReplaceAll(s, r.bare, "<target>")
	s = strings.ReplaceAll(s, r.refBare, "<target>")
	s = crashHex.ReplaceAllString(s, "<id>")
	return crashTime.ReplaceAllString(s, "<time>")
}

// step makes one call on both sessions, with no kill, and checks that
// they answer alike.
func (r *crashRig) step(op crashOp) {
	r.t.Helper()
	args := crashArgsFor(op, r.durableStatus)
	start := time.Now()
	out, isErr, err := r.srv.call(op.name, args)
	if err != nil {
		r.fail("%s: protocol error: %v", op, err)
	}
	r.learn(op.name, time.Since(start))
	r.note(op.String())
	refOut, refErr := r.applyRef(op)
	if isErr != refErr || r.normal(out) != r.normal(refOut) {
		r.fail("%s: the durable session answered (error %v)\n%s\nthe reference (error %v)\n%s", op, isErr, out, refErr, refOut)
	}
}

// learn keeps how long a tool takes, to spread the kills over its calls.
func (r *crashRig) learn(name string, d time.Duration) {
	if old, ok := r.est[name]; ok {
		d = (3*old + d) / 4
	}
	r.est[name] = d
}

func (r *crashRig) estimate(name string) time.Duration {
	if d, ok := r.est[name]; ok {
		return d
	}
	if name == "git_push" {
		return 40 * time.Millisecond
	}
	return 2 * time.Millisecond
}

// state is everything the worker can observe of a session, and the
// history of its target, with commit ids and times taken out: the files
// (every one read), git_status, each staged commit's diff, the
// checkpoints.
func (r *crashRig) state(call func(name string, args map[string]any) string, target string) []string {
	var out []string
	listing := call("list_files", map[string]any{"recursive": true})
	for _, line := range strings.Split(listing, "\n") {
		out = append(out, "list "+line)
		if strings.HasSuffix(line, "/") || strings.HasPrefix(line, "(nothing") {
			continue
		}
		p, _, _ := strings.Cut(line, " (")
		p = strings.TrimSuffix(p, "*")
		var content strings.Builder
		for start := 1; ; {
			page := call("read_file", map[string]any{"path": p, "start_line": start})
			m := crashReadOn.FindStringSubmatchIndex(page)
			if m == nil {
				content.WriteString(page)
				break
			}
			content.WriteString(page[:m[0]])
			start, _ = strconv.Atoi(page[m[2]:m[3]])
		}
		c := content.String()
		if len(c) > 300 {
			c = fmt.Sprintf("%d bytes, sha256 %x", len(c), sha256.Sum256([]byte(c)))
		}
		out = append(out, fmt.Sprintf("file %s = %q", p, c))
	}
	status := call("git_status", nil)
	for _, line := range strings.Split(r.normal(status), "\n") {
		out = append(out, "status "+line)
	}
	for i, id := range crashStagedIDs(status) {
		for _, line := range strings.Split(r.normal(call("git_diff", map[string]any{"commit_id": id})), "\n") {
			out = append(out, fmt.Sprintf("staged #%d %s", i, line))
		}
	}
	for _, line := range strings.Split(r.normal(call("list_checkpoints", nil)), "\n") {
		out = append(out, "checkpoint "+line)
	}
	// The target's history: trees (the same content is the same id on
	// both sides) and subjects.
	for _, line := range strings.Split(strings.TrimSpace(mustGit(r.t, r.env, target, "log", "--format=%T %s", "main")), "\n") {
		out = append(out, "target "+line)
	}
	return out
}

var crashReadOn = regexp.MustCompile(`\n?\[lines \d+-\d+ of \d+; read on with start_line=(\d+)\]$`)

func (r *crashRig) durableState() []string {
	return r.state(func(name string, args map[string]any) string {
		out, _, err := r.srv.call(name, args)
		if err != nil {
			r.fail("%s: protocol error while reading the state: %v", name, err)
		}
		return out
	}, r.bare)
}

func (r *crashRig) refState() []string {
	return r.state(func(name string, args map[string]any) string {
		out, _ := r.ref.call(name, args)
		return out
	}, r.refBare)
}
