package gittools

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverInstructions tell an MCP client what airlock is, in the words an
// agent needs.
const serverInstructions = `airlock is a sandbox: read_file, write_file, edit_file and the other file tools work on an in-memory workspace that never touches the host's disk, so write freely. checkpoint and rollback undo. To deliver work: git_stage makes a commit, git_diff shows it, git_push asks a human reviewer to approve it and pushes it if approved. Nothing leaves any other way.`

// NewMCPServer serves a session over MCP: every tool, and the worker's
// instructions as a prompt named after the worker.
func NewMCPServer(s *session.Session, version string) *mcp.Server {
	return NewMCPServerWith(s, version, "", nil)
}

// NewMCPServerWith is NewMCPServer with more instructions (how to come back
// to the session, say) and the MCP session ids it hands out (nil: the
// SDK's).
func NewMCPServerWith(s *session.Session, version, more string, sessionID func() string) *mcp.Server {
	instructions := serverInstructions + "\n\n" + workspaceText(s)
	if names := s.Repos(); len(names) > 0 {
		instructions += fmt.Sprintf("\n\nThis session holds %d git repositories, each in a directory of the workspace named after it: %s/. "+
			"The file tools and run see them all; the git tools work on one at a time (give repo, or paths under its directory), "+
			"and commit paths relative to that repository's directory.", len(names), strings.Join(names, "/, "))
	}
	if rec := s.Recovered(); rec != nil {
		// The worker learns what survived: it may be a new conversation
		// that knows nothing of the work before.
		instructions += "\n\n" + rec.Text()
	}
	if more != "" {
		instructions += "\n\n" + more
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "airlock", Title: "airlock sandbox", Version: version},
		&mcp.ServerOptions{Instructions: instructions, GetSessionID: sessionID})
	srv.AddReceivingMiddleware(openComments(s))
	for _, t := range ToolsFor(s) {
		srv.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Schema, Annotations: annotations(s, t.Name)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				progress := func(done, total float64, msg string) {
					if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
						req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
							ProgressToken: tok, Progress: done, Total: total, Message: msg})
					}
				}
				out, err := Call(ctx, s, t.Name, req.Params.Arguments, progress)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
			})
	}
	if s.MayRun() {
		if _, done := sandbox.Probed(); !done {
			// Offered before the sandbox's probe answered (a start
			// does not wait for it): taken back if it cannot be built,
			// which the SDK tells clients (tools/list_changed).
			go func() {
				if s.CanRun() != nil {
					srv.RemoveTools(slices.Collect(maps.Keys(runTools))...)
				}
			}()
		}
	}
	w := s.Worker()
	srv.AddPrompt(&mcp.Prompt{Name: w.Name, Description: promptDescription(w)},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			text := w.Instructions
			if text == "" {
				text = serverInstructions
			}
			return &mcp.GetPromptResult{Description: promptDescription(w),
				Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
		})
	return srv
}

func promptDescription(w *worker.Worker) string {
	if w.Description != "" {
		return w.Description
	}
	return fmt.Sprintf("The instructions of worker %s", w.Name)
}

// openComments adds to the instructions a client receives when it
// initializes (a new conversation, or one reconnecting after a restart)
// the reviewer's comments the worker has not answered yet: the server's
// instructions are fixed when it is made, the comments are not. A client
// of the stateless protocol reads them from server/discover, an older
// one from initialize.
func openComments(s *session.Session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || (method != "initialize" && method != "server/discover") {
				return res, err
			}
			open := s.OpenCommentsText()
			if open == "" {
				return res, nil
			}
			// Copies: the SDK may hand the same result out again.
			switch r := res.(type) {
			case *mcp.InitializeResult:
				cp := *r
				cp.Instructions += "\n\n" + open
				return &cp, nil
			case *mcp.DiscoverResult:
				cp := *r
				cp.Instructions += "\n\n" + open
				return &cp, nil
			}
			return res, nil
		}
	}
}
