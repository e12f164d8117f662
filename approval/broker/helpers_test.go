package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
)

func wait(t *testing.T, tk *approval.Ticket) (approval.Decision, approval.Grant, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return tk.Wait(ctx)
}
