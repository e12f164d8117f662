package gittools_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/worker"
)

// connect serves h's session over MCP in memory and returns a client
// session; progress notifications go to onProgress.
func connect(t *testing.T, h *harness, onProgress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv := gittools.NewMCPServer(h.s, "test")
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if onProgress != nil {
				onProgress(req.Params)
			}
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMCPToolsAndPrompt(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	cs := connect(t, h, nil)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{ // tool: required arguments
		"read_file": {"path"}, "write_file": {"path", "content"}, "edit_file": {"path"}, "list_files": nil,
		"search_files": {"pattern"}, "delete_file": {"path"}, "move_file": {"source", "destination"},
		"git_status": nil, "git_stage": nil /* message, unless amend keeps the latest's */, "git_diff": nil, "git_push": nil, "git_discard": nil, // commit_id or all
		"git_pull": nil, "checkpoint": nil, "rollback": nil, "list_checkpoints": nil,
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		got[tool.Name] = tool
	}
	for name, req := range want {
		tool, ok := got[name]
		if !ok {
			t.Errorf("tool %s is missing", name)
			continue
		}
		if len(tool.Description) < 40 {
			t.Errorf("%s: a description of %d characters does not tell an LLM enough", name, len(tool.Description))
		}
		raw, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Type     string
			Required []string
		}
		json.Unmarshal(raw, &schema)
		if schema.Type != "object" {
			t.Errorf("%s: schema type %q", name, schema.Type)
		}
		for _, r := range req {
			if !strings.Contains(strings.Join(schema.Required, ","), r) {
				t.Errorf("%s: %q is not required in %s", name, r, raw)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d tools, want %d", len(got), len(want))
	}

	// A tool error is a result the model reads, not a protocol error.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "../escape.txt", "content": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "..") {
		t.Errorf("a hostile path: error %v, %q", res.IsError, text(res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "notes.md", "content": "hello\n"}})
	if err != nil || res.IsError {
		t.Fatalf("write_file: %v %q", err, text(res))
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "tester" {
		t.Fatalf("prompts: %+v %v", prompts, err)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "tester"})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("prompt: %+v %v", p, err)
	}
}

// git_push sends progress while the reviewer decides, then the result.
func TestMCPPushReportsProgress(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Minute)
	var mu sync.Mutex
	var notes []string
	cs := connect(t, h, func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		notes = append(notes, p.Message)
		mu.Unlock()
	})
	ctx := context.Background()
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": "a.txt", "content": "a\n"}},
		{"git_stage", map[string]any{"message": "A"}},
	} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args}); err != nil || res.IsError {
			t.Fatalf("%s: %v %q", c.tool, err, text(res))
		}
	}
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			n := len(notes)
			mu.Unlock()
			if p := h.gate.Pending(); len(p) == 1 && n > 0 {
				h.gate.Resolve(approval.Decision{Request: p[0].ID, Verdict: approval.Approve})
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	params := &mcp.CallToolParams{Name: "git_push", Arguments: map[string]any{}}
	params.SetProgressToken("push-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("git_push: %v %q", err, text(res))
	}
	if !strings.Contains(text(res), "pushed") {
		t.Errorf("git_push said %q", text(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) == 0 || !strings.Contains(notes[0], "reviewer") {
		t.Errorf("progress notifications: %q", notes)
	}
	if log := git(t, h.repo, "log", "--format=%s", "main"); log != "A\ninit\n" {
		t.Errorf("log:\n%s", log)
	}
}

// Over MCP, every tool carries all four annotations, true of it: the
// readers are read-only, what can lose work in the sandbox is destructive,
// and only what leaves the sandbox (git_push, git_pull) is open-world.
func TestMCPToolAnnotations(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	cs := connect(t, h, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type hints struct {
		Title                                                        string
		ReadOnlyHint, DestructiveHint, IdempotentHint, OpenWorldHint *bool
	}
	want := map[string]string{ // readOnly destructive idempotent openWorld
		"read_file": "RO - I -", "list_files": "RO - I -", "search_files": "RO - I -",
		"git_status": "RO - I -", "git_diff": "RO - I -", "list_checkpoints": "RO - I -",
		"write_file": "- D I -", "edit_file": "- D - -", "delete_file": "- D I -", "move_file": "- D - -",
		"git_stage": "- - - -", "git_push": "- - I OW", "git_discard": "- D I -", "git_pull": "- D I OW",
		"checkpoint": "- - - -", "rollback": "- D I -",
	}
	flag := func(b *bool, yes string) string {
		if b != nil && *b {
			return yes
		}
		return "-"
	}
	for _, tool := range tools.Tools {
		raw, _ := json.Marshal(tool)
		var got struct{ Annotations *hints }
		json.Unmarshal(raw, &got)
		a := got.Annotations
		if a == nil || a.Title == "" || a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations %s lack a title or a hint", tool.Name, raw)
			continue
		}
		g := strings.Join([]string{flag(a.ReadOnlyHint, "RO"), flag(a.DestructiveHint, "D"), flag(a.IdempotentHint, "I"), flag(a.OpenWorldHint, "OW")}, " ")
		if g != want[tool.Name] {
			t.Errorf("%s: annotations %s, want %s", tool.Name, g, want[tool.Name])
		}
	}
}

// The MCP instructions say what the workspace holds, so that the agent
// does not have to ask: the repository, branch and commit pulled, how many
// files and where, and where a push goes; for the default worker on a
// repository without a commit, that there is nothing yet and why.
func TestMCPInstructionsSayWhatIsThere(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	head := strings.TrimSpace(git(t, h.repo, "rev-parse", "--short=7", "main"))
	got := connect(t, h, nil).InitializeResult().Instructions
	mustContain(t, "the instructions", got,
		"The workspace holds branch main of local:"+h.repo+" at "+head+` ("init"): 2 files, at the workspace's root`,
		"git_push sends staged commits to local:"+h.repo+" (branch main)")

	empty := t.TempDir()
	git(t, empty, "init", "-q", "-b", "trunk", ".")
	e := openSession(t, worker.Default(empty), approval.Policy{}, nil)
	got = connect(t, e, nil).InitializeResult().Instructions
	mustContain(t, "the default worker's instructions on an empty repository", got,
		"The workspace holds no files yet: the branch this worker pulls has no commits", "local:"+empty+" (its default branch)")

	// The default worker on a repository with commits starts with its
	// current branch pulled.
	w := worker.Default(h.repo)
	git(t, h.repo, "switch", "-q", "-c", "feature")
	d := openSession(t, w, approval.Policy{}, nil)
	got = connect(t, d, nil).InitializeResult().Instructions
	mustContain(t, "the default worker's instructions", got, "branch feature of local:"+h.repo+" at "+head, "2 files", "(branch feature)")
	mustContain(t, "read_file", d.call("read_file", map[string]any{"path": "templates/report.md"}), "# Report")
}
