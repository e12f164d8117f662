package approval_test

import (
	"encoding/json"
	"testing"

	"github.com/airlock-dev/airlock/approval"
)

// A comment without a side, a range or a commit reads and signs as before
// those fields existed: they are left out of its JSON, and an old one
// reads back the same.
func TestCommentJSONBackwardCompatible(t *testing.T) {
	old := `{"path":"a.go","line":3,"text":"why?"}`
	data, err := json.Marshal(approval.Comment{Path: "a.go", Line: 3, Text: "why?"})
	if err != nil || string(data) != old {
		t.Fatalf("%s, %v; want %s", data, err, old)
	}
	var c approval.Comment
	if err := json.Unmarshal([]byte(old), &c); err != nil || c != (approval.Comment{Path: "a.go", Line: 3, Text: "why?"}) {
		t.Fatalf("%+v, %v", c, err)
	}
	data, _ = json.Marshal(approval.Comment{Path: "a.go", Line: 3, EndLine: 5, Side: approval.SideOld, Text: "these"})
	if want := `{"path":"a.go","line":3,"text":"these","side":"old","end_line":5}`; string(data) != want {
		t.Errorf("%s, want %s", data, want)
	}
}
