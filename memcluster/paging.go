package memcluster

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// page is a list request's limit and continue token. As on a real API server, a token
// carries the resourceVersion of the list it continues and the last key it returned;
// once the changes since that version are no longer kept (etcd has compacted them, on a
// real server), the token is expired: 410 Gone. Unlike a real server's, a continued list
// shows objects as they are now, not as they were at the token's version.
type page struct {
	limit int
	rv    uint64    // of the list continued; 0 for a first page
	after [2]string // namespace and name of the last object returned
}

type continueToken struct {
	RV    uint64    `json:"rv"`
	After [2]string `json:"after"`
}

func parsePage(r *http.Request) (page, error) {
	q := r.URL.Query()
	var p page
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return p, apierrors.NewBadRequest("limit must be a non-negative integer")
		}
		p.limit = n
	}
	if c := q.Get("continue"); c != "" {
		data, err := base64.RawURLEncoding.DecodeString(c)
		var tok continueToken
		if err != nil || json.Unmarshal(data, &tok) != nil || tok.RV == 0 || tok.After[1] == "" {
			return p, apierrors.NewBadRequest("continue key is not valid: " + c)
		}
		p.rv, p.after = tok.RV, tok.After
	}
	return p, nil
}

// cut returns the page of objs after the token's key, at most limit long, and the token
// of the next page ("" at the end).
func (p page) cut(objs []*stored, rv uint64) ([]*stored, string) {
	start := 0
	if p.after[1] != "" {
		for start < len(objs) && compareKeys(objectKey(objs[start]), p.after) <= 0 {
			start++
		}
	}
	objs = objs[start:]
	if p.limit == 0 || len(objs) <= p.limit {
		return objs, ""
	}
	data, _ := json.Marshal(continueToken{RV: rv, After: objectKey(objs[p.limit-1])})
	return objs[:p.limit], base64.RawURLEncoding.EncodeToString(data)
}

// objectKey is what a list orders objects by: namespace, then name.
func objectKey(st *stored) [2]string { return [2]string{st.namespace(), st.name()} }

func compareKeys(a, b [2]string) int {
	if c := strings.Compare(a[0], b[0]); c != 0 {
		return c
	}
	return strings.Compare(a[1], b[1])
}
