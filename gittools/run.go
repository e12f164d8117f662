package gittools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
)

type runArgs struct {
	Command string   `json:"command,omitempty" jsonschema:"a shell line, run with /bin/sh -c in the workspace, e.g. go test ./..."`
	Argv    []string `json:"argv,omitempty" jsonschema:"or a program and its arguments, run without a shell, e.g. [\"make\", \"test\"]"`
	Cwd     string   `json:"cwd,omitempty" jsonschema:"the workspace directory to run in; default: the workspace root"`
	Timeout int      `json:"timeout,omitempty" jsonschema:"seconds before the run is killed; default 600, at most what the operator allows"`
	Stdin   string   `json:"stdin,omitempty" jsonschema:"text given to the command on its standard input"`
	Network bool     `json:"network,omitempty" jsonschema:"ask a human reviewer to let this run reach the network (to download dependencies, say); give the reason"`
	Reason  string   `json:"reason,omitempty" jsonschema:"why the run needs the network, for the reviewer"`
}

type runOutputArgs struct {
	ID     string `json:"id" jsonschema:"the run's id, as run answered it (run-N)"`
	Stream string `json:"stream,omitempty" jsonschema:"stdout (the default) or stderr"`
}

// runTools are present only where the session can run commands.
var runTools = map[string]bool{"run": true, "run_output": true}

func commandTools() []Tool {
	return []Tool{
		define("run", "Run a command (a build, the tests) in a sandbox that sees the workspace at /workspace, read-write, "+
			"and the system's tools read-only; no network, no home, no secrets. What it creates, changes and deletes lands "+
			"in the workspace (through the same rules as write_file), a checkpoint taken first undoes it, and the answer "+
			"lists it with the exit code and the output. With network: true and a reason, a human reviewer is asked to let "+
			"the run reach the network.", runCommand),
		define("run_output", "Show the whole output of a recent run (run cuts long output short in its answer).", runOutput),
	}
}

func runCommand(ctx context.Context, s *session.Session, a runArgs, p Progress) (string, error) {
	if a.Timeout < 0 {
		return "", &ToolError{Msg: "timeout must be a positive number of seconds"}
	}
	res, err := s.Run(ctx, session.RunArgs{Command: a.Command, Argv: a.Argv, Cwd: a.Cwd,
		Timeout: time.Duration(a.Timeout) * time.Second, Stdin: a.Stdin, Network: a.Network, Reason: a.Reason}, p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "killed after %s: the timeout ran out", res.Duration.Round(time.Millisecond))
	case res.Killed != "":
		fmt.Fprintf(&b, "killed after %s: %s", res.Duration.Round(time.Millisecond), res.Killed)
	default:
		fmt.Fprintf(&b, "exit %d in %s", res.Exit, res.Duration.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, " (%s; rollback name=%q undoes it)\n", res.ID, res.Checkpoint)
	switch res.NetworkBy {
	case "":
	case "operator":
		b.WriteString("network: on (the operator runs commands with the network)\n")
	case "once":
		b.WriteString("network: allowed by the reviewer for this run\n")
	default:
		fmt.Fprintf(&b, "network: allowed by the reviewer for every %s of this session\n", map[string]string{"command": "run of this command", "session": "run"}[res.NetworkBy])
	}
	for _, l := range []struct {
		what  string
		paths []string
	}{{"created", res.Created}, {"modified", res.Modified}, {"deleted", res.Deleted}} {
		if len(l.paths) > 0 {
			fmt.Fprintf(&b, "%s: %s\n", l.what, listOrNone(l.paths))
		}
	}
	if res.Ignored > 0 {
		fmt.Fprintf(&b, "ignored: %d paths .gitignore excludes (in the workspace, not changes to stage; git_status ignored=true lists them)\n", res.Ignored)
	}
	if res.Discarded > 0 {
		fmt.Fprintf(&b, "discarded %d changes: commands run read-only here\n", res.Discarded)
	}
	if res.CacheDropped != "" {
		fmt.Fprintf(&b, "cache: %s\n", res.CacheDropped)
	}
	listRefused(&b, "refused (%d; the workspace keeps what it had):\n", res.Refused)
	listRefused(&b, "not in the run (%d; their content could not be read, the command ran without them):\n", res.Unread)
	if res.Stdout != "" {
		fmt.Fprintf(&b, "--- stdout ---\n%s", res.Stdout)
		if !strings.HasSuffix(res.Stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if res.Stderr != "" {
		fmt.Fprintf(&b, "--- stderr ---\n%s", res.Stderr)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func runOutput(_ context.Context, s *session.Session, a runOutputArgs, _ Progress) (string, error) {
	return s.RunOutput(a.ID, a.Stream)
}

// listRefused writes the heading (with the count) and up to 20 of rs.
func listRefused(b *strings.Builder, heading string, rs []memfs.Refused) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(b, heading, len(rs))
	for i, r := range rs {
		if i == 20 {
			fmt.Fprintf(b, "  [%d more]\n", len(rs)-i)
			break
		}
		fmt.Fprintf(b, "  %s: %v\n", shown(r.Path), r.Err)
	}
}
