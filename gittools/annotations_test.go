package gittools

import "testing"

// Every tool of the surface, run and run_output included, has its
// annotations written down: a new tool without them fails here.
func TestEveryToolIsAnnotated(t *testing.T) {
	for _, tool := range Tools() {
		h, ok := toolHints[tool.Name]
		if !ok {
			t.Errorf("tool %s has no entry in toolHints", tool.Name)
			continue
		}
		if h.title == "" {
			t.Errorf("tool %s has no title", tool.Name)
		}
		if h.readOnly && (h.destructive || h.openWorld) {
			t.Errorf("tool %s is read-only, yet destructive or open-world", tool.Name)
		}
	}
	if len(toolHints) != len(Tools()) {
		t.Errorf("toolHints has %d entries for %d tools", len(toolHints), len(Tools()))
	}
}

// Every tool that changes the sandbox says whether read-only mode offers
// it: a new one that does not say fails here, rather than reaching
// read-only sessions because nobody thought of them. A reader says
// nothing (it is always offered).
func TestReadOnlyModeIsDeclared(t *testing.T) {
	for _, tool := range Tools() {
		h := toolHints[tool.Name]
		switch {
		case h.readOnly && h.readOnlyMode != undeclared:
			t.Errorf("tool %s changes nothing, yet declares readOnlyMode %d", tool.Name, h.readOnlyMode)
		case !h.readOnly && h.readOnlyMode == undeclared:
			t.Errorf("tool %s changes the sandbox and does not say whether read-only mode offers it (readOnlyMode: offered or withheld)", tool.Name)
		}
	}
}
