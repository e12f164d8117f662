package approval

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// hexHash is a SHA written as git writes it. plumbing.Hash has no JSON
// form of its own and would be written as an array of 20 numbers: unreadable
// in the ledger and on the broker's socket.
type hexHash plumbing.Hash

func (h hexHash) MarshalText() ([]byte, error) { return []byte(plumbing.Hash(h).String()), nil }

func (h *hexHash) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*h = hexHash(plumbing.ZeroHash)
		return nil
	}
	p := plumbing.NewHash(string(b))
	if len(b) != 40 || p.String() != strings.ToLower(string(b)) {
		return fmt.Errorf("%q is not a SHA-1 in hex", b)
	}
	*h = hexHash(p)
	return nil
}

// The outer fields of the anonymous structs below shadow the embedded
// ones of the same JSON name (encoding/json takes the shallowest).

func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	return json.Marshal(struct {
		plain
		Old  hexHash `json:"old"`
		New  hexHash `json:"new"`
		Tree hexHash `json:"tree"`
	}{plain(r), hexHash(r.Old), hexHash(r.New), hexHash(r.Tree)})
}

func (r *Request) UnmarshalJSON(b []byte) error {
	type plain Request
	v := struct {
		*plain
		Old  hexHash `json:"old"`
		New  hexHash `json:"new"`
		Tree hexHash `json:"tree"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.Old, r.New, r.Tree = plumbing.Hash(v.Old), plumbing.Hash(v.New), plumbing.Hash(v.Tree)
	return nil
}

func (c CommitInfo) MarshalJSON() ([]byte, error) {
	type plain CommitInfo
	return json.Marshal(struct {
		plain
		ID hexHash `json:"id"`
	}{plain(c), hexHash(c.ID)})
}

func (c *CommitInfo) UnmarshalJSON(b []byte) error {
	type plain CommitInfo
	v := struct {
		*plain
		ID hexHash `json:"id"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.ID = plumbing.Hash(v.ID)
	return nil
}

func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision
	var nu *hexHash // omitted when zero, as the tag says
	if !d.New.IsZero() {
		h := hexHash(d.New)
		nu = &h
	}
	return json.Marshal(struct {
		plain
		New *hexHash `json:"new,omitempty"`
	}{plain(d), nu})
}

func (d *Decision) UnmarshalJSON(b []byte) error {
	type plain Decision
	v := struct {
		*plain
		New hexHash `json:"new"`
	}{plain: (*plain)(d)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	d.New = plumbing.Hash(v.New)
	return nil
}
