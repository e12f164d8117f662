package main

import (
	"strings"

	"github.com/airlock-dev/airlock/approval"
)

// protectFlag is serve's --protect: branches (or patterns) a push to
// needs a typed yes, each checked as it is given.
type protectFlag []string

func (p *protectFlag) String() string { return strings.Join(*p, ",") }

func (p *protectFlag) Set(v string) error {
	if err := approval.CheckProtect(v); err != nil {
		return err
	}
	*p = append(*p, v)
	return nil
}
