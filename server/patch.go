package server

import (
	"errors"
	"net/http"
	"slices"

	"github.com/listwatch/listwatch/server/internal/patch"
	"github.com/listwatch/listwatch/wire"
)

// Patch content types kube accepts.
const (
	contentMergePatch     = "application/merge-patch+json"
	contentJSONPatch      = "application/json-patch+json"
	contentStrategicPatch = "application/strategic-merge-patch+json"
	contentApplyPatch     = "application/apply-patch+yaml"
)

// patch answers PATCH on an object: merge, JSON and (for built-ins)
// strategic merge patches, applied to the current object in a
// read-patch-write loop that retries when another writer got in between.
// A resourceVersion the patch sets is a precondition (409 if stale).
// Server-side apply is not supported: 415.
func (c *call) patch() error {
	if c.scale {
		return c.patchScale()
	}
	if err := c.checkFieldValidationParam("PatchOptions"); err != nil {
		return err
	}
	ct, _ := parseMediaRange(c.r.Header.Get("Content-Type"))
	var apply func(doc, p []byte) ([]byte, error)
	switch ct {
	case contentMergePatch:
		apply = patch.MergePatch
	case contentJSONPatch:
		apply = patch.JSONPatch
	case contentStrategicPatch:
		schema, ok := patch.SchemaFor(c.res.group, c.res.kind)
		if !ok || c.res.crd != "" {
			return wire.NewUnsupportedMediaType(ct)
		}
		apply = func(doc, p []byte) ([]byte, error) { return patch.StrategicMergePatch(doc, p, schema) }
	default:
		return wire.NewUnsupportedMediaType(ct)
	}
	body, err := c.readBody()
	if err != nil {
		return err
	}
	var bodyErrs strictErrors // kube checks merge and strategic patches' own keys
	if ct != contentJSONPatch {
		bodyErrs = patchDuplicates(body)
	}
	stored, err := c.s.guaranteedUpdate(c.r.Context(), c, 0, func(cur *doc) (*doc, error) {
		curRV := cur.metaString("resourceVersion")
		patched, err := apply(c.res.relabel(cur.encodeWithRV(curRV)), body) // as the URL's version sees it
		if err != nil {
			return nil, patchError(err)
		}
		next, err := decodeDoc(patched)
		if err != nil {
			return nil, err
		}
		next.strict = append(slices.Clone(bodyErrs), next.strict...)
		if err := c.checkPatched(next, patched); err != nil {
			return nil, err
		}
		if rv := next.metaString("resourceVersion"); rv != "" && rv != curRV {
			return nil, wire.NewConflict(c.res.gr(), c.name, wire.ConflictModified)
		}
		return next, nil
	})
	if err != nil {
		return err
	}
	return c.writeObject(http.StatusOK, stored)
}

// patchError maps the patch package's errors to kube's answers.
func patchError(err error) error {
	switch {
	case errors.Is(err, patch.ErrTooDeep):
		return tooDeep()
	case errors.Is(err, patch.ErrTooManyOperations):
		st := wire.NewRequestEntityTooLarge(int64(patch.MaxOperations))
		st.Message = err.Error()
		return st
	case errors.Is(err, patch.ErrInvalidPatch):
		return wire.NewBadRequest(err.Error())
	case errors.Is(err, patch.ErrConflict):
		st := wire.NewInvalid("", "", "")
		st.Message = err.Error()
		st.Details = nil
		return st
	}
	return wire.NewInternalError(err)
}
