package httpretry

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRetryJudge(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	rt := &Transport{Now: func() time.Time { return now }}
	resp := func(code int, body string, headers ...string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		for i := 0; i < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		return r
	}
	cases := []struct {
		name  string
		resp  *http.Response
		err   error
		retry bool
		wait  time.Duration // exact, or 0: a backoff of 1s to 1.25s
		least time.Duration // at least, when set
	}{
		{"200", resp(200, ""), nil, false, 0, 0},
		{"404", resp(404, ""), nil, false, 0, 0},
		{"422", resp(422, ""), nil, false, 0, 0},
		{"403 without a limit", resp(403, `{"message":"Resource not accessible by integration"}`), nil, false, 0, 0},
		{"dropped connection", nil, errors.New("EOF"), true, 0, 0},
		{"502", resp(502, ""), nil, true, 0, 0},
		{"503 with Retry-After", resp(503, "", "Retry-After", "12"), nil, true, 12 * time.Second, 0},
		{"429 Retry-After seconds", resp(429, "", "Retry-After", "5"), nil, true, 5 * time.Second, 0},
		{"429 Retry-After date", resp(429, "", "Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)), nil, true, 90 * time.Second, 0},
		{"403 primary limit", resp(403, "", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(30*time.Second).Unix(), 10)), nil, true, 31 * time.Second, 0},
		{"403 secondary limit, no header", resp(403, `{"message":"You have exceeded a secondary rate limit"}`), nil, true, -1, time.Minute},
		{"429 no header", resp(429, ""), nil, true, -1, time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wait, retry := rt.judge(c.resp, c.err, 0)
			if retry != c.retry {
				t.Fatalf("retry %v, want %v", retry, c.retry)
			}
			switch {
			case !retry:
			case c.least > 0:
				if wait < c.least {
					t.Errorf("wait %v, want at least %v", wait, c.least)
				}
			case c.wait > 0:
				if wait != c.wait {
					t.Errorf("wait %v, want %v", wait, c.wait)
				}
			default:
				if wait < time.Second || wait > 1250*time.Millisecond {
					t.Errorf("backoff %v, want 1s to 1.25s", wait)
				}
			}
			if c.resp != nil && c.resp.StatusCode == 403 {
				// The body is still there for whoever reads the answer.
				if b, _ := io.ReadAll(c.resp.Body); c.name != "403 primary limit" && len(b) == 0 {
					t.Error("judging consumed the body")
				}
			}
		})
	}
}
