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
