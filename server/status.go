package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// writeJSON writes v as the response body with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, mustStatusJSON(wire.NewInternalError(err))
	}
	writeRaw(w, code, b)
}

// writeRaw writes body, a JSON document, as the response with code. Like
// kube's JSON encoder, it ends the document with a newline.
func writeRaw(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(body[:len(body):len(body)], '\n')
	}
	_, _ = w.Write(body)
}

func mustStatusJSON(s *wire.Status) []byte {
	b, _ := json.Marshal(s)
	return b
}

// writeError writes err as a Status. Errors that are not a *wire.Status
// become 500s; handlers translate storage errors first (storageError).
func writeError(w http.ResponseWriter, err error) {
	st := asStatus(err)
	setRetryAfter(w, st)
	writeRaw(w, int(st.Code), mustStatusJSON(st))
}

// setRetryAfter sets the Retry-After header of st's retry delay, if it
// has one: as kube-apiserver, the header, not only the body, tells
// clients when to retry (a too-large resourceVersion, say).
func setRetryAfter(w http.ResponseWriter, st *wire.Status) {
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
}

// writeResourceError is writeError for a request on a resource: the
// Status is in the media type kube negotiates for it (offeredMedia):
// protobuf or YAML when the client asks for them, indented JSON when it
// accepts none of JSON, YAML and protobuf as they are
// (writeIndentedStatus). What a YAML answer's
// handler buffered (yamlWriter) is dropped.
func writeResourceError(w http.ResponseWriter, r *http.Request, err error) {
	if y, ok := w.(*yamlWriter); ok {
		w = y.bypass()
	}
	var body []byte
	st := asStatus(err)
	mt, ok := offeredMedia(r.Header.Get("Accept"))
	if !ok {
		writeIndentedStatus(w, st)
		return
	}
	switch mt {
	case mediaProto:
		body, err = protoStatus(st)
	case contentYAML:
		body, err = sigsyaml.JSONToYAML(mustStatusJSON(st))
	}
	if mt == mediaJSON || err != nil {
		writeError(w, st)
		return
	}
	setRetryAfter(w, st)
	writeBody(w, int(st.Code), mt, body)
}

// writeIndentedStatus writes st as kube's WriteObjectNegotiated writes an
// error when the client accepts no media type the Status can be written
// in (one asking for a Table or partial metadata, say): its
// WriteRawJSON, JSON indented by two spaces, with no final newline.
func writeIndentedStatus(w http.ResponseWriter, st *wire.Status) {
	setRetryAfter(w, st)
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		writeError(w, st)
		return
	}
	writeBody(w, int(st.Code), "application/json", b)
}

// writeBody writes body with its content type and code.
func writeBody(w http.ResponseWriter, code int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func asStatus(err error) *wire.Status {
	var st *wire.Status
	if errors.As(err, &st) {
		return st
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return wire.NewTimeout(fmt.Sprintf("the request did not complete in time: %v", err))
	case errors.Is(err, context.Canceled):
		return wire.NewTimeout("the request was canceled")
	}
	var backend *storage.BackendError
	if errors.As(err, &backend) {
		// kube's registry passes etcd's own error up as it is (its
		// Interpret*Error map only storage's), and ErrorToAPIStatus
		// answers an error that is not a Status with a 500 of no reason
		// and the error's text: "etcdserver: request timed out".
		return &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
			Code: http.StatusInternalServerError, Message: backend.Err.Error()}
	}
	return wire.NewInternalError(err)
}

// storageError translates a storage error about the object name of r into
// the Status kube-apiserver returns for it.
func storageError(err error, r *resource, name string) error {
	var st *wire.Status
	var compacted *storage.CompactedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &st):
		return st
	case errors.Is(err, storage.ErrNotFound):
		return wire.NewNotFound(r.gr(), name)
	case errors.Is(err, storage.ErrExists):
		return wire.NewAlreadyExists(r.gr(), name)
	case errors.Is(err, storage.ErrConflict):
		return wire.NewConflict(r.gr(), name, wire.ConflictModified)
	case errors.As(err, &compacted):
		return wire.NewResourceExpired(tooOldMessage(compacted))
	case errors.Is(err, storage.ErrInvalidContinue):
		return wire.NewBadRequest("invalid continue token: " + strings.TrimPrefix(err.Error(), storage.ErrInvalidContinue.Error()+": "))
	case errors.Is(err, storage.ErrTooLargeResourceVersion), errors.Is(err, storage.ErrFutureRevision):
		return tooLargeRV(err)
	case errors.Is(err, storage.ErrValueTooLarge):
		// A write the store refused for its size (a patch can grow an
		// object past etcd's request limit with a small body): kube's 413,
		// not a 500.
		st := wire.NewRequestEntityTooLarge(0)
		st.Message = "Request entity too large: " + strings.TrimPrefix(err.Error(), "storage: ")
		return st
	}
	return asStatus(err)
}

func tooOldMessage(c *storage.CompactedError) string {
	return fmt.Sprintf("too old resource version: %d (%d)", c.Requested, c.Compacted)
}

// tooLargeRV is kube's 504 for a resourceVersion the store has not
// reached: clients retry it after a second.
func tooLargeRV(err error) *wire.Status {
	msg := "Timeout: Too large resource version" // kube's NewTimeoutError prefixes "Timeout: "
	var tl *storage.TooLargeResourceVersionError
	if errors.As(err, &tl) {
		msg = fmt.Sprintf("Timeout: Too large resource version: %d, current: %d", tl.Requested, tl.Current)
	}
	st := wire.NewTimeout(msg)
	st.Details = &wire.StatusDetails{RetryAfterSeconds: 1,
		Causes: []wire.StatusCause{{Type: "ResourceVersionTooLarge", Message: "Too large resource version"}}}
	return st
}

// continueExpired is kube's 410 for a continue token whose revision was
// compacted.
func continueExpired() *wire.Status {
	return wire.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
}

// notFoundPath is the 404 of a path that names no served resource.
// writeNoRoute answers a request no route serves as kube-apiserver
// does: under its built-in API (the core group under /api, a built-in
// group under /apis, /version) with a Status, and on any other path (an
// unknown group, a custom resource's group, a path outside the API)
// with Go's plain "404 page not found", which is where kube's chain of
// handlers ends.
func writeNoRoute(w http.ResponseWriter, r *http.Request) {
	if kubeRoutes(r.URL.Path) {
		writeResourceError(w, r, notFoundPath())
		return
	}
	http.NotFound(w, r)
}

// kubeRoutes reports whether kube-apiserver's built-in API has a route
// for p's prefix (and answers a miss below it with a Status).
func kubeRoutes(p string) bool {
	switch {
	case p == "/api" || strings.HasPrefix(p, "/api/"), p == "/version" || strings.HasPrefix(p, "/version/"):
		return true
	case strings.HasPrefix(p, "/apis/"):
		group, _, _ := strings.Cut(strings.TrimPrefix(p, "/apis/"), "/")
		return slices.Contains(kubeGroupOrder, group)
	}
	return false
}

func notFoundPath() *wire.Status {
	st := wire.NewNotFound(wire.GroupResource{}, "")
	st.Message = "the server could not find the requested resource"
	st.Details = &wire.StatusDetails{}
	return st
}

// invalid builds kube's 422: `Kind.group "name" is invalid: field: Type: detail`.
// Each cause's Message is the error body ("Invalid value: ...").
func invalid(qualifiedKind, group, kind, name string, causes ...wire.StatusCause) *wire.Status {
	st := wire.NewInvalid(group, qualifiedKind, name, causes...)
	st.Details.Kind = kind
	return st
}

func fieldInvalid(field, value, detail string) wire.StatusCause {
	return wire.StatusCause{Type: "FieldValueInvalid", Field: field,
		Message: fmt.Sprintf("Invalid value: %q: %s", value, detail)}
}

func fieldRequired(field, detail string) wire.StatusCause {
	return wire.StatusCause{Type: "FieldValueRequired", Field: field, Message: "Required value: " + detail}
}

func fieldForbidden(field, detail string) wire.StatusCause {
	return wire.StatusCause{Type: "FieldValueForbidden", Field: field, Message: "Forbidden: " + detail}
}

// methodNotAllowed is the router's 405 for a method the path does not
// serve.
func methodNotAllowed() *wire.Status {
	st := wire.NewMethodNotSupported(wire.GroupResource{}, "")
	st.Message = "the server does not allow this method on the requested resource"
	st.Details = &wire.StatusDetails{}
	return st
}
