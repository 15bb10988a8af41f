package controllers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownController is returned by New (and ParseControllers) for a
// name in Config.Controllers that names no controller.
var ErrUnknownController = errors.New("controllers: unknown controller")

// Controller names, as kube-controller-manager spells them.
const (
	NamespaceController      = "namespace-controller"
	ServiceAccountController = "serviceaccount-controller"
	RootCAPublisher          = "root-ca-certificate-publisher-controller"
	GarbageCollector         = "garbage-collector-controller"
	ClusterRoleAggregation   = "clusterrole-aggregation-controller"
)

// aliases are the short names kube-controller-manager also accepts.
var aliases = map[string]string{
	"namespace":               NamespaceController,
	"serviceaccount":          ServiceAccountController,
	"root-ca-cert-publisher":  RootCAPublisher,
	"garbagecollector":        GarbageCollector,
	"clusterrole-aggregation": ClusterRoleAggregation,
}

// Names lists every controller a Host can run, all on by default.
func Names() []string {
	return []string{NamespaceController, ServiceAccountController, RootCAPublisher, GarbageCollector, ClusterRoleAggregation}
}

// canonical is name without its alias, or "" if it names no controller.
func canonical(name string) string {
	if c, ok := aliases[name]; ok {
		return c
	}
	if slices.Contains(Names(), name) {
		return name
	}
	return ""
}

// Enabled resolves a --controllers list into the controllers it enables,
// in Names order. Each entry is "*", a name or alias, or "-" and one; the
// first entry naming a controller decides it, and "*" enables the rest.
func Enabled(list []string) ([]string, error) {
	decided := map[string]bool{}
	star := false
	for _, e := range list {
		e = strings.TrimSpace(e)
		if e == "*" {
			star = true
			continue
		}
		off := strings.HasPrefix(e, "-")
		name := canonical(strings.TrimPrefix(e, "-"))
		if name == "" {
			return nil, fmt.Errorf("%w: %q is not in the list of known controllers", ErrUnknownController, strings.TrimPrefix(e, "-"))
		}
		if _, ok := decided[name]; !ok {
			decided[name] = !off
		}
	}
	var out []string
	for _, name := range Names() {
		on, ok := decided[name]
		if (ok && on) || (!ok && star) {
			out = append(out, name)
		}
	}
	return out, nil
}
