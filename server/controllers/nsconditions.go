package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The conditions the namespace controller sets on a Terminating
// namespace, with kube's types, reasons and messages. Each is False (the
// "ok" reason and message) unless this pass found otherwise.
var namespaceConditionTypes = []string{
	"NamespaceDeletionDiscoveryFailure",
	"NamespaceDeletionGroupVersionParsingFailure",
	"NamespaceDeletionContentFailure",
	"NamespaceContentRemaining",
	"NamespaceFinalizersRemaining",
}

var okCondition = map[string][2]string{ // type: reason, message
	"NamespaceDeletionDiscoveryFailure":           {"ResourcesDiscovered", "All resources successfully discovered"},
	"NamespaceDeletionGroupVersionParsingFailure": {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	"NamespaceDeletionContentFailure":             {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	"NamespaceContentRemaining":                   {"ContentRemoved", "All content successfully removed"},
	"NamespaceFinalizersRemaining":                {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// condition is one namespace condition as found in status.conditions.
type condition struct {
	Type, Status, Reason, Message string
}

// conditionUpdater gathers one deletion pass's findings; apply writes
// them into a namespace's status.
type conditionUpdater struct {
	found        []condition
	deleteErrors []string
}

func (c *conditionUpdater) discoveryFailed(err error) {
	c.found = append(c.found, condition{"NamespaceDeletionDiscoveryFailure", "True", "DiscoveryFailed", err.Error()})
}

func (c *conditionUpdater) groupVersionParsingFailed(err error) {
	c.found = append(c.found, condition{"NamespaceDeletionGroupVersionParsingFailure", "True", "GroupVersionParsingFailed", err.Error()})
}

func (c *conditionUpdater) deleteContentFailed(err error) {
	c.deleteErrors = append(c.deleteErrors, err.Error())
}

// remaining records what is left: instances per resource ("configmaps."
// for the core group, as kube prints it) and per finalizer.
func (c *conditionUpdater) remaining(byResource, byFinalizer map[string]int) {
	if len(byResource) > 0 {
		var parts []string
		for r, n := range byResource {
			parts = append(parts, fmt.Sprintf("%s has %d resource instances", r, n))
		}
		slices.Sort(parts)
		c.found = append(c.found, condition{"NamespaceContentRemaining", "True", "SomeResourcesRemain",
			"Some resources are remaining: " + strings.Join(parts, ", ")})
	}
	if len(byFinalizer) > 0 {
		var parts []string
		for f, n := range byFinalizer {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		slices.Sort(parts)
		c.found = append(c.found, condition{"NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: " + strings.Join(parts, ", ")})
	}
}

func (c *conditionUpdater) get(typ string) (condition, bool) {
	for _, f := range c.found {
		if f.Type == typ {
			return f, true
		}
	}
	if typ == "NamespaceDeletionContentFailure" && len(c.deleteErrors) > 0 {
		msgs := slices.Clone(c.deleteErrors)
		slices.Sort(msgs)
		return condition{typ, "True", "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", "))}, true
	}
	ok := okCondition[typ]
	return condition{typ, "False", ok[0], ok[1]}, false
}

// apply sets every condition type on ns's status.conditions (a new
// lastTransitionTime when its status flips) and reports whether anything
// changed.
func (c *conditionUpdater) apply(ns u, now time.Time) bool {
	conds, _ := nested[[]any](ns, "status", "conditions")
	changed := false
	stamp := now.UTC().Format(time.RFC3339)
	for _, typ := range namespaceConditionTypes {
		want, _ := c.get(typ)
		i := slices.IndexFunc(conds, func(v any) bool {
			m, _ := v.(map[string]any)
			return m["type"] == typ
		})
		if i < 0 {
			conds = append(conds, map[string]any{"type": typ, "status": want.Status, "lastTransitionTime": stamp,
				"reason": want.Reason, "message": want.Message})
			changed = true
			continue
		}
		old, _ := conds[i].(map[string]any)
		if old["status"] == want.Status && old["reason"] == want.Reason && old["message"] == want.Message {
			continue
		}
		if old["status"] != want.Status {
			old["lastTransitionTime"] = stamp
		}
		old["status"], old["reason"], old["message"] = want.Status, want.Reason, want.Message
		changed = true
	}
	if changed {
		ns.SetNested(conds, "status", "conditions")
	}
	return changed
}

// nested reads the field at path of obj as a T.
func nested[T any](obj u, path ...string) (T, bool) {
	v, ok := obj.Nested(path...)
	t, isT := v.(T)
	return t, ok && isT
}
