package controllers

import (
	"github.com/listwatch/listwatch/server/controllers/garbagecollector"
)

// startGarbageCollector runs kube's garbage collector as rebuilt in
// package garbagecollector (background, orphan and foreground deletion
// over every deletable resource) for the term.
func startGarbageCollector(t *term) error {
	gc, err := garbagecollector.New(garbagecollector.Config{
		Client:     t.c,
		Logger:     t.host.log.With("controller", GarbageCollector),
		Registerer: t.host.cfg.Registerer,
	})
	if err != nil {
		return err
	}
	t.g.Go(GarbageCollector, gc.Run)
	return nil
}
