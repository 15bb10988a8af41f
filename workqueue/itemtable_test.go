package workqueue

import (
	"math/rand/v2"
	"testing"
)

// FuzzItemTable drives an itemTable and a map with the same random
// operations and checks they always agree. Tags come from a tiny range
// (and the table starts small), so probe runs are long, wrap around the
// end of the slots, and backward-shift deletion is exercised hard.
func FuzzItemTable(f *testing.F) {
	f.Add(uint64(1), uint8(4), uint16(200))
	f.Add(uint64(2), uint8(1), uint16(1000))
	f.Add(uint64(3), uint8(255), uint16(3000))
	f.Fuzz(func(t *testing.T, seed uint64, tagRange uint8, ops uint16) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		var tbl itemTable[int]
		model := map[int]uint8{}
		tagFor := func(item int) uint32 { return uint32(item*2654435761) % (uint32(tagRange) + 1) }
		for range ops {
			item := rng.IntN(64)
			tag := tagFor(item)
			i := tbl.find(tag, item)
			want, present := model[item]
			if (i >= 0) != present || present && tbl.slots[i].flags != want {
				t.Fatalf("find(%d) = %d, model has %v (flags %d)", item, i, present, want)
			}
			switch {
			case !present:
				flags := uint8(rng.IntN(7) + 1)
				tbl.insert(tag, item, flags)
				model[item] = flags
			case rng.IntN(3) == 0:
				tbl.slots[i].flags = flagProcessing
				model[item] = flagProcessing
			default:
				tbl.remove(i)
				delete(model, item)
			}
			if tbl.used != len(model) || tbl.used*4 > len(tbl.slots)*3 {
				t.Fatalf("used %d of %d slots, model %d", tbl.used, len(tbl.slots), len(model))
			}
		}
		for item, flags := range model {
			if i := tbl.find(tagFor(item), item); i < 0 || tbl.slots[i].flags != flags {
				t.Fatalf("item %d lost (slot %d)", item, i)
			}
		}
		tbl.keepProcessing()
		for item, flags := range model {
			i := tbl.find(tagFor(item), item)
			if (i >= 0) != (flags&flagProcessing != 0) || i >= 0 && tbl.slots[i].flags != flagProcessing {
				t.Fatalf("after keepProcessing: item %d flags %d at slot %d", item, flags, i)
			}
		}
	})
}
