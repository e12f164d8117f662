package httpretry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Transport retries what GitHub asks to be retried: 5xx answers,
// primary and secondary rate limits (honouring Retry-After and
// X-RateLimit-Reset) and connections that broke before an answer came.
//
// Retrying a request that did reach GitHub is safe for everything the
// GitHub target sends: blobs, trees and commits are content-addressed (the
// same request makes the same object, never a second one), a ref update
// names the commit it sets, and a ref creation that finds the ref already
// there is resolved by the caller by reading the ref.
type Transport struct {
	Base    http.RoundTripper
	Retries int
	// MaxWait is the longest single wait accepted; a rate limit that asks
	// for longer fails at once, saying when to try again.
	MaxWait time.Duration
	Sleep   func(ctx context.Context, d time.Duration) error // waits d, or until ctx is done
	Now     func() time.Time
}

// SleepCtx waits d, or until ctx is done.
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RateLimitedError says GitHub asked for a wait longer than airlock waits.
type RateLimitedError struct {
	Status int
	Wait   time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("GitHub's rate limit (HTTP %d) asks to wait %s before the next request; push again after that", e.Status, e.Wait.Round(time.Second))
}

func (rt *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			r = req.Clone(ctx)
			if req.Body != nil && req.Body != http.NoBody {
				if req.GetBody == nil {
					return nil, errors.New("cannot retry a request whose body cannot be read again")
				}
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := rt.Base.RoundTrip(r)
		if ctx.Err() != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return nil, ctx.Err()
		}
		wait, retry := rt.judge(resp, err, attempt)
		if !retry {
			return resp, err
		}
		if wait > rt.MaxWait && resp != nil {
			resp.Body.Close()
			return nil, &RateLimitedError{Status: resp.StatusCode, Wait: wait}
		}
		wait = min(wait, rt.MaxWait)
		if attempt >= rt.Retries {
			return resp, err
		}
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		if err := rt.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// judge decides whether to retry, and after how long.
func (rt *Transport) judge(resp *http.Response, err error, attempt int) (time.Duration, bool) {
	backoff := time.Second << min(attempt, 6)
	backoff += time.Duration(rand.Int64N(int64(backoff / 4)))
	if err != nil {
		return backoff, true // the connection broke: try again
	}
	switch code := resp.StatusCode; {
	case code == http.StatusInternalServerError, code == http.StatusBadGateway,
		code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		if d, ok := retryAfter(resp, rt.Now()); ok {
			return d, true
		}
		return backoff, true
	case code == http.StatusTooManyRequests, code == http.StatusForbidden:
		if d, ok := retryAfter(resp, rt.Now()); ok {
			return d, true
		}
		if resp.Header.Get("X-RateLimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
				return max(time.Unix(reset, 0).Sub(rt.Now()), 0) + time.Second, true
			}
		}
		if code == http.StatusTooManyRequests || secondaryLimit(resp) {
			// GitHub: without Retry-After, wait at least a minute.
			return max(backoff, time.Minute), true
		}
	}
	return 0, false
}

// retryAfter reads Retry-After, in seconds or as an HTTP date.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// secondaryLimit looks into a 403's body for GitHub's secondary rate limit
// message, and puts the body back for whoever reads the answer.
func secondaryLimit(resp *http.Response) bool {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return bytes.Contains(bytes.ToLower(body), []byte("secondary rate limit"))
}
