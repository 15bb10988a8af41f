package demo

import (
	"context"
	"fmt"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// step is one scripted change and the outcome that completes it.
type step struct {
	say     string
	do      func(ctx context.Context) error
	events  []string // informer events to wait for, in order
	actions []string // controller actions to wait for, in order
}

// play waits for the cache, then runs the script's steps one by one.
func play(ctx context.Context, cfg Config, cms *client.Resource[*object.Unstructured], inf *informer.Informer[*object.Unstructured], obs *observer) error {
	sctx, cancel := context.WithTimeout(ctx, cfg.StepTimeout)
	synced := informer.WaitForCacheSync(sctx, inf.HasSynced)
	cancel()
	if !synced {
		return fmt.Errorf("%w: cache sync: %v", ErrStepTimeout, inf.LastSyncError())
	}
	for _, s := range script(cfg, cms, inf) {
		if err := runStep(ctx, cfg, obs, s); err != nil {
			return err
		}
	}
	return nil
}

func runStep(ctx context.Context, cfg Config, obs *observer, s step) error {
	cfg.OnStep(s.say)
	m := obs.mark()
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.StepTimeout, ErrStepTimeout)
	defer cancel()
	if err := s.do(ctx); err != nil {
		return fmt.Errorf("demo: %s: %w", s.say, err)
	}
	if err := obs.waitFor(ctx, m, s.events, s.actions); err != nil {
		return fmt.Errorf("demo: %s: waiting for %v and %v: %w", s.say, s.events, s.actions, err)
	}
	return nil
}

func script(cfg Config, cms *client.Resource[*object.Unstructured], inf *informer.Informer[*object.Unstructured]) []step {
	src := object.NewKey(cfg.Namespace, cfg.Name)
	mirror := src + MirrorSuffix
	act := func(a string) string { return src + ": " + a }
	return []step{{
		say: "create configmap " + src,
		do: func(ctx context.Context) error {
			cm := &object.Unstructured{}
			cm.SetAPIVersion("v1")
			cm.SetKind("ConfigMap")
			cm.SetName(cfg.Name)
			cm.SetNested(map[string]any{"greeting": "hello"}, "data")
			_, err := cms.Create(ctx, cm)
			return err
		},
		events:  []string{EventAdd + " " + src, EventAdd + " " + mirror},
		actions: []string{act(ActionCreated)},
	}, {
		say: "update configmap " + src,
		do: func(ctx context.Context) error {
			cur, ok := inf.Lister().Get(cfg.Namespace, cfg.Name)
			if !ok {
				return fmt.Errorf("%s not in the cache", src)
			}
			cm := cur.DeepCopy()
			cm.SetNested(map[string]any{"greeting": "hello, world", "color": "blue"}, "data")
			_, err := cms.Update(ctx, cm)
			return err
		},
		events:  []string{EventUpdate + " " + src, EventUpdate + " " + mirror},
		actions: []string{act(ActionUpdated)},
	}, {
		say: "delete configmap " + mirror + " by hand",
		do: func(ctx context.Context) error {
			_, err := cms.Delete(ctx, cfg.Name+MirrorSuffix, wire.DeleteOptions{})
			return err
		},
		events:  []string{EventDelete + " " + mirror, EventAdd + " " + mirror},
		actions: []string{act(ActionCreated)},
	}, {
		say: "delete configmap " + src,
		do: func(ctx context.Context) error {
			_, err := cms.Delete(ctx, cfg.Name, wire.DeleteOptions{})
			return err
		},
		events:  []string{EventDelete + " " + src, EventDelete + " " + mirror},
		actions: []string{act(ActionDeleted)},
	}}
}
