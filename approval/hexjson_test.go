package approval

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestHashesAreHexInJSON(t *testing.T) {
	old := plumbing.NewHash("1111111111111111111111111111111111111111")
	nu := plumbing.NewHash("2222222222222222222222222222222222222222")
	req := Request{ID: "r1", Target: "local:/x", Ref: "refs/heads/main", Old: old, New: nu, Tree: nu,
		Commits: []CommitInfo{{ID: nu, Message: "m"}}, Added: 3}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"old":"1111111111111111111111111111111111111111"`, `"id":"2222222222222222222222222222222222222222"`, `"added":3`, `"ref":"refs/heads/main"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s lacks %s", raw, want)
		}
	}
	var back Request
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Old != old || back.New != nu || back.Tree != nu || back.Commits[0].ID != nu || back.ID != "r1" || back.Added != 3 {
		t.Errorf("round trip: %+v", back)
	}

	for _, d := range []Decision{{Request: "r1", Verdict: Approve, New: nu}, {Request: "r2", Verdict: Reject, Reason: "no"}} {
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if d.New.IsZero() == strings.Contains(string(raw), `"new"`) {
			t.Errorf("%s: new present %v, want %v", raw, !d.New.IsZero(), !d.New.IsZero())
		}
		var back Decision
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if back.New != d.New || back.Request != d.Request || back.Verdict != d.Verdict || back.Reason != d.Reason {
			t.Errorf("round trip: %+v, want %+v", back, d)
		}
	}
	if err := json.Unmarshal([]byte(`{"old":"not-a-sha"}`), &back); err == nil {
		t.Error("a malformed SHA was accepted")
	}
}
