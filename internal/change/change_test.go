package change

import (
	"encoding/json"
	"testing"
)

func TestKindSpellings(t *testing.T) {
	for _, c := range []struct {
		k               Kind
		str, sign, wire string
	}{
		{Create, "create", "+", `"create"`},
		{Update, "update", "M", `"update"`},
		{Delete, "delete", "-", `"delete"`},
		{Rename, "rename", "R", `"rename"`},
		{Copy, "copy", "C", `"copy"`},
		{0, "Kind(0)", "M", `""`},
	} {
		if got := c.k.String(); got != c.str {
			t.Errorf("%d: String = %q, want %q", c.k, got, c.str)
		}
		if got := c.k.Sign(); got != c.sign {
			t.Errorf("%d: Sign = %q, want %q", c.k, got, c.sign)
		}
		b, err := json.Marshal(c.k)
		if err != nil || string(b) != c.wire {
			t.Errorf("%d: JSON = %s, %v, want %s", c.k, b, err, c.wire)
		}
		var back Kind
		if err := json.Unmarshal(b, &back); err != nil || back != c.k {
			t.Errorf("%s: decoded as %d, %v", b, back, err)
		}
	}
}

// The numbers are persisted in a durable session's staged commits.
func TestKindNumbers(t *testing.T) {
	if Create != 1 || Update != 2 || Delete != 3 || Rename != 4 || Copy != 5 {
		t.Fatalf("Create, Update, Delete = %d, %d, %d; persisted sessions hold 1, 2, 3", Create, Update, Delete)
	}
}

func TestKindRefusesUnknownText(t *testing.T) {
	var k Kind
	if err := json.Unmarshal([]byte(`"move"`), &k); err == nil {
		t.Fatalf("decoded %q as %v", "move", k)
	}
	if _, err := json.Marshal(Kind(9)); err == nil {
		t.Fatal("encoded Kind(9)")
	}
}
