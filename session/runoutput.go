package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A durable session keeps its runs' output in its state directory, so
// that run_output answers after a restart as before it: one file per run,
// runs/run-N, a JSON header line and then the kept stdout and stderr. It
// is written (and renamed into place) before the run answers, as the
// journal's batches are: a SIGKILL cannot take it. The journal does not
// hold it: output is not state a resume rebuilds, and up to 8 MiB a stream
// would make every rewrite of the journal carry it. Only the newest
// runsKept stay, on disk as in memory; a session in memory only keeps
// them in memory.

// runHeader is a run file's first line.
type runHeader struct {
	ID     string   `json:"id"`
	Stdout int      `json:"stdout"` // bytes of stdout kept, then of stderr
	Stderr int      `json:"stderr"`
	Cut    [2]int64 `json:"cut"` // bytes of each that were not kept
}

// runsDir is where a durable session's run outputs live; "" in memory.
func (s *Session) runsDir() string {
	dir := s.localStateDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "runs")
}

// keep adds a run's output to those RunOutput can show, written to dir
// first when the session is durable; the oldest beyond runsKept goes. An
// output that cannot be written stays in memory: readable until the
// server stops.
func (r *runner) keep(out *runOutput, dir string) {
	if dir != "" {
		if err := writeRunOutput(dir, out); err == nil {
			out.file = filepath.Join(dir, out.id)
			out.stdout, out.stderr = nil, nil
		}
	}
	r.outputs = append(r.outputs, out)
	if len(r.outputs) > runsKept {
		if old := r.outputs[0]; old.file != "" {
			_ = os.Remove(old.file) // one left over is removed by the next resume's listing
		}
		r.outputs = r.outputs[1:]
	}
}

func writeRunOutput(dir string, out *runOutput) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	head, err := json.Marshal(runHeader{ID: out.id, Stdout: len(out.stdout), Stderr: len(out.stderr), Cut: [2]int64{out.cutOut, out.cutErr}})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, out.id+".tmp")
	data := make([]byte, 0, len(head)+1+len(out.stdout)+len(out.stderr))
	data = append(append(append(append(data, head...), '\n'), out.stdout...), out.stderr...)
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		_ = os.Remove(tmp) // one left over is removed by the next resume's listing
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, out.id))
}

// load returns the output with its streams in memory: itself, or read
// back from its file.
func (o *runOutput) load() (*runOutput, error) {
	if o.file == "" {
		return o, nil
	}
	data, err := os.ReadFile(o.file)
	if err != nil {
		return nil, fmt.Errorf("the output of %s cannot be read from the session's state directory: %v", o.id, err)
	}
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	var h runHeader
	if !ok || json.Unmarshal(line, &h) != nil || h.ID != o.id || h.Stdout < 0 || h.Stderr < 0 || h.Stdout+h.Stderr != len(rest) {
		return nil, fmt.Errorf("the output of %s in the session's state directory is damaged; run the command again", o.id)
	}
	return &runOutput{id: o.id, stdout: rest[:h.Stdout], stderr: rest[h.Stdout:], cutOut: h.Cut[0], cutErr: h.Cut[1]}, nil
}

// resumeOutputs takes up the outputs a durable session kept in dir (the
// newest runsKept; older ones, and files a crash left half-written, are
// removed), and numbers the next run after the last one.
func (r *runner) resumeOutputs(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return // none yet (or unreadable: run_output says there is none)
	}
	var ns []int
	for _, e := range ents {
		n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "run-"))
		if !strings.HasPrefix(e.Name(), "run-") || err != nil || n <= 0 || !e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(dir, e.Name())) // not an output: tidying
			continue
		}
		ns = append(ns, n)
	}
	sort.Ints(ns)
	for i, n := range ns {
		id := fmt.Sprintf("run-%d", n)
		if i < len(ns)-runsKept {
			_ = os.Remove(filepath.Join(dir, id)) // past the newest kept: tidying
			continue
		}
		r.outputs = append(r.outputs, &runOutput{id: id, file: filepath.Join(dir, id)})
	}
	if len(ns) > 0 {
		r.n = max(r.n, ns[len(ns)-1])
	}
}
