// Package handlers holds what the server decodes into types whose Go
// names appear in kube-apiserver's error messages: a decoding error
// names the destination type, and kube's is handlers.jsonPatchOp (in
// k8s.io/apiserver/pkg/endpoints/handlers), so ours is named alike.
package handlers

import (
	"fmt"

	kjson "sigs.k8s.io/json"
)

// jsonPatchOp is one operation of a JSON patch, the fields kube knows.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// StrictJSONPatchErrors decodes a JSON patch strictly, as kube does
// under fieldValidation Strict or Warn: err is a patch that does not
// decode at all, strict the unknown or duplicate fields of its
// operations, each prefixed "json patch " as kube words them.
func StrictJSONPatchErrors(patch []byte) (strict []string, err error) {
	var ops []jsonPatchOp
	errs, err := kjson.UnmarshalStrict(patch, &ops)
	if err != nil {
		return nil, err
	}
	for _, e := range errs {
		strict = append(strict, fmt.Sprintf("json patch %v", e))
	}
	return strict, nil
}
