#!/usr/bin/env python3
# A sequential model of templates/segmented/merge.cu (the merge-path offsets mapping), line by
# line: the partition search, the tiles, each thread's merge, the warp and block segmented scan,
# the carries, and which segments are stored and which combined atomically. It checks the
# algorithm's logic on the CPU (int sums against a direct sum; every segment written exactly once,
# never both stored and combined) for awkward offset sets and geometries. It is a model, not the
# kernel: the GPU tests (tests/test_gpu_segmented.cpp) are what check the kernel itself.
# Usage: python3 scripts/merge-emulation.py   (prints "all ok N")
import random

def rt_end(off, x, base, n):
    e = off[x+1]-base
    return 0 if e < 0 else (n if e > n else e)
def rt_start(off, x, base, n):
    return 0 if x == 0 else rt_end(off, x-1, base, n)

def merge_search(off, base, n, d, lo, hi):
    while lo < hi:
        ps = [lo + (hi-lo)*lane//32 for lane in range(32)]
        ended = [rt_end(off, p, base, n) <= d - p - 1 for p in ps]
        c = sum(ended)
        if c == 0: return lo
        last = ps[c-1]; nxt = ps[c & 31]
        hi = hi if c == 32 else nxt
        lo = last+1 if last+1 < hi else hi
    return lo

def run(data, off, BLOCK, ITEMS, G, ident=0, comb=lambda a,b: a+b):
    count = len(off)-1
    TILE = BLOCK*ITEMS
    out = [None]*count
    atomics = []
    global plain
    plain = []
    base = off[0]; n = max(off[count]-base, 0)
    segs = count; total = segs+n
    coord = [None]*(2*(G+1))
    for b in range(G+1):
        d = (total//G)*b + (total % G)*b//G
        lo = max(d-n, 0); hi = min(d, segs)
        x = merge_search(off, base, n, d, lo, hi); y = d-x
        coord[2*b] = x; coord[2*b+1] = y
        if b > 0 and b < G and x < segs and y > rt_start(off, x, base, n):
            out[x] = ident
    for blk in range(G):
        xb, yb, xe, ye = coord[2*blk], coord[2*blk+1], coord[2*blk+2], coord[2*blk+3]
        head_cut = blk > 0 and xb < segs and yb > rt_start(off, xb, base, n)
        x, y = xb, yb
        carry = ident
        while x + y < xe + ye:
            ln = min(xe+ye-(x+y), TILE)
            d = x+y+ln
            lo = x + max(ln-(n-y), 0); hi = x+ln
            if d - ye > lo: lo = d-ye
            if xe < hi: hi = xe
            if lo > hi: lo = hi
            tile_end = merge_search(off, base, n, d, lo, hi)
            ends = tile_end - x
            ends = min(ends, segs - x); ends = max(ends, 0)
            elems = min(ln-ends, n-y)
            items = ends+elems
            if items <= 0: break
            xt, yt = x+ends, y+elems
            elem_s = [data[base+y+i] for i in range(elems)]
            end_s = [rt_end(off, x+i, base, n)-y for i in range(ends)]
            F=[];V=[];FIRST=[];FE=[]
            for tid in range(BLOCK):
                td = min(tid*ITEMS, items)
                lo_, hi_ = max(td-elems, 0), min(td, ends)
                while lo_ < hi_:
                    mid = (lo_+hi_)//2
                    if end_s[mid] <= td-mid-1: lo_ = mid+1
                    else: hi_ = mid
                i, j = lo_, td-lo_
                steps = min(items-td, ITEMS)
                acc = ident; first = ident; first_end = -1
                for k in range(ITEMS):
                    if k < steps:
                        if i < ends and (j >= elems or end_s[i] <= j):
                            if first_end < 0: first_end = i; first = acc
                            else:
                                plain.append(x+i); out[x+i] = acc
                            acc = ident; i += 1
                        elif j < elems:
                            acc = comb(acc, elem_s[j]); j += 1
                F.append(first_end >= 0); V.append(acc); FIRST.append(first); FE.append(first_end)
            # warp Hillis-Steele
            f = F[:]; v = V[:]
            nw = BLOCK//32
            for w in range(nw):
                o = 1
                while o < 32:
                    pv = [v[w*32+l-o] if l >= o else None for l in range(32)]
                    pf = [f[w*32+l-o] if l >= o else None for l in range(32)]
                    for l in range(32):
                        if l >= o:
                            t = w*32+l
                            if not f[t]: v[t] = comb(pv[l], v[t])
                            f[t] = f[t] or pf[l]
                    o <<= 1
            warp_v = [v[w*32+31] for w in range(nw)]; warp_f = [f[w*32+31] for w in range(nw)]
            inc_v = [None]*BLOCK; WV=[None]*BLOCK
            for t in range(BLOCK):
                w = t//32
                wf, wv = True, carry
                for u in range(w):
                    ff, fv = warp_f[u], warp_v[u]
                    if not ff: fv = comb(wv, fv)
                    ff = ff or wf
                    wf, wv = ff, fv
                ft, vt = f[t], v[t]
                if not ft: vt = comb(wv, vt)
                inc_v[t] = vt; WV[t] = wv
            for t in range(BLOCK):
                before = WV[t] if t % 32 == 0 else inc_v[t-1]
                if FE[t] >= 0:
                    r = comb(before, FIRST[t])
                    if x + FE[t] == xb and head_cut: atomics.append((xb, r))
                    else: plain.append(x+FE[t]); out[x+FE[t]] = r
            carry = inc_v[BLOCK-1]
            x, y = xt, yt
        if xe+ye > xb+yb and xe < segs and ye > rt_start(off, xe, base, n):
            atomics.append((xe, carry))
    assert len(plain) == len(set(plain)), "a row stored twice"
    assert not (set(plain) & set(a for a, _ in atomics)), "a row stored and combined"
    assert len(set(plain) | set(a for a, _ in atomics)) == count, "a row never written"
    for s, r in atomics:
        assert out[s] is not None, ("atomic into unset", s)
        out[s] = comb(out[s], r)
    return out

def ref(data, off):
    return [sum(data[off[s]:off[s+1]]) if off[s+1] > off[s] else 0 for s in range(len(off)-1)]

random.seed(1)
def check(off, BLOCK, ITEMS, G):
    N = off[-1] + 5
    data = [random.randint(-100, 100) for _ in range(N)]
    got = run(data, off, BLOCK, ITEMS, G)
    exp = ref(data, off)
    bad = [i for i in range(len(exp)) if got[i] != exp[i]]
    assert not bad, (BLOCK, ITEMS, G, bad[:5], [got[i] for i in bad[:5]], [exp[i] for i in bad[:5]])

cases = []
cases.append([0,0,5,5,5,2000,2001,2001])
cases.append([7,7,7,8,1000,1000,1000,3000,3001,3001])
cases.append([0,1])
cases.append(list(range(0, 3001)))
cases.append([0]*500 + [500]*500)
for seed in range(6):
    random.seed(seed)
    cnt = random.randint(1, 400)
    lens = [random.choice([0,0,1,2,3,10,50,int(random.expovariate(1/200))]) for _ in range(cnt)]
    if seed % 2: lens[random.randrange(cnt)] = 5000
    off = [0]
    for l in lens: off.append(off[-1]+l)
    cases.append(off)
for off in cases:
    for BLOCK, ITEMS, G in [(32,4,1),(32,4,3),(64,2,5),(32,8,17),(64,4,64),(32,1,7)]:
        check(off, BLOCK, ITEMS, G)
print("all ok", len(cases))
