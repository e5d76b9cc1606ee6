package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/idemcheck/idemcheck/internal/pause"
)

type postJSON struct {
	ID    string `json:"id"`
	Likes int64  `json:"likes"`
}

type likeRequest struct {
	OpID string `json:"op_id"`
}

// handlePostLike adds a like once per op_id: the op is inserted into
// like_ops (unique) and the counter incremented in one atomic step.
func (s *Server) handlePostLike() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req likeRequest
		if err := decode(w, r, &req); err != nil {
			problem(w, http.StatusBadRequest, "invalid like", err.Error())
			return
		}
		if req.OpID == "" {
			problem(w, http.StatusBadRequest, "invalid like", "op_id is required")
			return
		}
		ctx := context.WithoutCancel(r.Context())
		id := r.PathValue("id")
		if rejectText(w, "invalid like", "post id", id, "op_id", req.OpID) {
			return
		}
		if s.bugs[BugNoUniqueIndex] {
			s.likeCheckThenInsert(ctx, w, id, req.OpID)
			return
		}
		p, err := s.ledger.Like(ctx, id, req.OpID, true)
		s.answerPost(w, "like", p, err)
	}
}

// likeCheckThenInsert is the no-unique-index bug: a lookup of the op, some
// work, then an insert that nothing makes unique.
func (s *Server) likeCheckThenInsert(ctx context.Context, w http.ResponseWriter, id, opID string) {
	seen, err := s.ledger.HasLikeOp(ctx, id, opID)
	if err != nil {
		s.unavailable(w, "check like op", err)
		return
	}
	var p Post
	if seen {
		p, err = s.ledger.Post(ctx, id)
	} else {
		pause.For(ctx, s.raceWindow)
		p, err = s.ledger.Like(ctx, id, opID, false)
	}
	s.answerPost(w, "like", p, err)
}

func (s *Server) handleNaivePostLike() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req likeRequest
		body, err := readBody(w, r)
		if err == nil && len(bytes.TrimSpace(body)) > 0 {
			err = json.Unmarshal(body, &req)
		}
		if err != nil {
			problem(w, http.StatusBadRequest, "invalid like", err.Error())
			return
		}
		if rejectText(w, "invalid like", "post id", r.PathValue("id"), "op_id", req.OpID) {
			return
		}
		p, err := s.ledger.Like(context.WithoutCancel(r.Context()), r.PathValue("id"), req.OpID, false)
		s.answerPost(w, "like", p, err)
	}
}

func (s *Server) handlePostGet() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if rejectText(w, "invalid post", "post id", r.PathValue("id")) {
			return
		}
		p, err := s.ledger.Post(r.Context(), r.PathValue("id"))
		s.answerPost(w, "get post", p, err)
	}
}

// answerPost writes p, or the failure of what when err is set.
func (s *Server) answerPost(w http.ResponseWriter, what string, p Post, err error) {
	if err != nil {
		s.unavailable(w, what, err)
		return
	}
	encode(w, http.StatusOK, postJSON(p))
}
