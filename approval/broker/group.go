package broker

// ServerRequests is the open requests of one server, by session.
type ServerRequests struct {
	Server   ServerInfo
	Sessions []SessionRequests
}

// SessionRequests is the open requests of one session, by repository.
type SessionRequests struct {
	Session string
	Repos   []RepoRequests
}

// RepoRequests is the open requests of one repository of a session (Repo
// is "" for a session of one repository), oldest first.
type RepoRequests struct {
	Repo     string
	Requests []*Incoming
}

// Grouped groups open requests, as Pending returns them (oldest first), by
// server, then session, then repository. Servers come in the order of their
// oldest request, and so do a server's sessions and a session's
// repositories: the first request of the first group is the oldest of all.
// Two servers are two groups even when they report the same pid.
func Grouped(pending []*Incoming) []ServerRequests {
	var out []ServerRequests
	index := map[string]int{}
	for _, in := range pending {
		i, ok := index[in.server]
		if !ok {
			i = len(out)
			index[in.server] = i
			out = append(out, ServerRequests{Server: in.Server})
		}
		srv := &out[i]
		sess := findOrAdd(&srv.Sessions, func(s SessionRequests) bool { return s.Session == in.Request.Session },
			SessionRequests{Session: in.Request.Session})
		repo := findOrAdd(&sess.Repos, func(r RepoRequests) bool { return r.Repo == in.Request.Repo },
			RepoRequests{Repo: in.Request.Repo})
		repo.Requests = append(repo.Requests, in)
	}
	return out
}

// findOrAdd finds the element of *s that match accepts, or appends fresh.
func findOrAdd[T any](s *[]T, match func(T) bool, fresh T) *T {
	for i := range *s {
		if match((*s)[i]) {
			return &(*s)[i]
		}
	}
	*s = append(*s, fresh)
	return &(*s)[len(*s)-1]
}
