// Package httpretry is the HTTP transport under the GitHub target's API
// client: it retries what GitHub asks to be retried (5xx answers, primary
// and secondary rate limits, honouring Retry-After and X-RateLimit-Reset,
// connections that broke before an answer) and fails at once, with a
// *RateLimitedError saying when to try again, where GitHub asks for a
// longer wait than the target accepts. It knows nothing of git; targets
// builds it into its GitHub client.
package httpretry
