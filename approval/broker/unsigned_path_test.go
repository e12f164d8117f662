package broker_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoUnsignedPathFromAnotherProcess: the packages that take decisions
// from other processes (this one's socket, the fleet's queue) hand them
// to the gate only through ResolveSigned, never Resolve, which trusts
// its caller.
func TestNoUnsignedPathFromAnotherProcess(t *testing.T) {
	for _, dir := range []string{".", "natsqueue"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		signed := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					switch sel.Sel.Name {
					case "Resolve":
						t.Errorf("%s calls %s.Resolve: a decision from another process must go through ResolveSigned", f, sel.X)
					case "ResolveSigned":
						signed++
					}
				}
				return true
			})
		}
		if signed == 0 {
			t.Errorf("%s never calls ResolveSigned: how do its decisions reach the gate?", dir)
		}
	}
}
