package gittools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/session"
	"github.com/google/jsonschema-go/jsonschema"
)

// Tool is one tool of the worker's surface, described once: served over
// MCP and callable in process.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON schema of the input.
	Schema *jsonschema.Schema
	call   func(ctx context.Context, s *session.Session, raw json.RawMessage, p Progress) (string, error)
}

// Progress reports how a long call is going (MCP progress notifications).
type Progress = session.Progress

// ToolError is an error a worker can act on: it is shown to the worker as
// the tool's result, never as a protocol failure or a stack trace.
type ToolError struct{ Msg string }

func (e *ToolError) Error() string { return e.Msg }

// define makes a Tool whose input is In, decoded strictly: unknown
// arguments and wrong types are errors that say what was expected.
func define[In any](name, description string, fn func(ctx context.Context, s *session.Session, in In, p Progress) (string, error)) Tool {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("gittools: schema of %s: %v", name, err))
	}
	return Tool{Name: name, Description: description, Schema: schema,
		call: func(ctx context.Context, s *session.Session, raw json.RawMessage, p Progress) (string, error) {
			var in In
			if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&in); err != nil {
					return "", &ToolError{Msg: argumentError(name, schema, err)}
				}
			}
			return fn(ctx, s, in, p)
		}}
}

// argumentError explains a decoding failure in terms of the tool's
// arguments.
func argumentError(tool string, schema *jsonschema.Schema, err error) string {
	var names []string
	for k := range schema.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	msg := err.Error()
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		msg = fmt.Sprintf("argument %q must be a %s, not a JSON %s", te.Field, te.Type.Kind(), te.Value)
	case strings.HasPrefix(msg, "json: unknown field "):
		msg = fmt.Sprintf("%s is not an argument of %s", strings.TrimPrefix(msg, "json: unknown field "), tool)
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "the arguments are not complete JSON"
	}
	return fmt.Sprintf("%s: %s; its arguments are %s", tool, msg, strings.Join(names, ", "))
}

// Tools is the worker's whole surface.
func Tools() []Tool { return toolList }

// ToolsFor is the surface a session offers: without commands (the
// operator did not enable them, or the sandbox cannot be built here), run
// and run_output are absent, never present and unsandboxed. While the
// sandbox is still being probed they are offered (a run waits for the
// probe's answer); see NewMCPServerWith, which takes them back if the
// answer is no.
//
// A read-only session (airlock serve --run read-only) still offers the
// tools its annotations withhold in that mode (hints.readOnlyMode): Call
// refuses them with an answer that says why, which a worker can act on,
// where a tool missing from the list would only be "unknown".
func ToolsFor(s *session.Session) []Tool {
	if s.MayRun() {
		return toolList
	}
	var out []Tool
	for _, t := range toolList {
		if !runTools[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// Call runs a tool on s in process. Errors a worker can act on are
// returned as *ToolError.
func Call(ctx context.Context, s *session.Session, name string, args json.RawMessage, p Progress) (string, error) {
	if p == nil {
		p = func(float64, float64, string) {}
	}
	if _, known := toolHints[name]; known && s.ReadOnly() && !offeredReadOnly(name) {
		return "", &ToolError{Msg: fmt.Sprintf("%s: the workspace is read-only in this session (the operator started airlock serve --run read-only); read, search and run commands, but nothing can be written", name)}
	}
	for _, t := range toolList {
		if t.Name == name {
			out, err := t.call(ctx, s, args, p)
			// An answered call is durable: whatever it changed is saved
			// before the answer leaves. A reader changed nothing, and
			// needs no write to answer: with the disk full it still
			// answers (an earlier call's failed save was said in its own
			// answer, and the next change saves it).
			if toolHints[name].readOnly {
				return out, toolError(err)
			}
			serr := s.Save()
			if serr == nil && err == nil {
				// A flush that failed since: what was answered lately
				// is not on the disk. A read keeps it for the next write.
				if ferr := s.FlushErr(); ferr != nil {
					return "", &ToolError{Msg: fmt.Sprintf("%s done, but %v; the operator must check the disk of the server's state directory", name, ferr)}
				}
			}
			if serr != nil {
				if err == nil {
					return "", &ToolError{Msg: fmt.Sprintf("%s done, but not saved: %v. It holds while this server runs, and is lost if it stops; the operator must free space in the server's state directory (or make it writable), after which the next call saves everything", name, serr)}
				}
				err = fmt.Errorf("%w (and %v)", err, serr)
			}
			return out, toolError(err)
		}
	}
	return "", &ToolError{Msg: fmt.Sprintf("no tool is named %q", name)}
}

// toolError is err as the worker is told it: a *ToolError.
func toolError(err error) error {
	if err == nil {
		return nil
	}
	var te *ToolError
	if !errors.As(err, &te) {
		err = &ToolError{Msg: workerMessage(err)}
	} else if msg := escapeText(te.Msg); msg != te.Msg {
		err = &ToolError{Msg: msg}
	}
	return err
}

// workerMessage is an error as the worker sees it: one paragraph, no Go
// error plumbing that would mean nothing to it.
func workerMessage(err error) string {
	msg := err.Error()
	if len(msg) > 4000 {
		msg = strings.ToValidUTF8(msg[:4000], "") + "..."
	}
	return escapeText(msg)
}

var toolList []Tool

func init() {
	toolList = append(fileTools(), append(gitTools(), append(checkpointTools(), commandTools()...)...)...)
}
