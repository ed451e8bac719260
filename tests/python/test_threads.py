"""Calls from several threads: the GIL is released during an estimate and calls share nothing."""

import concurrent.futures
import threading
import time

import trainsim

PLANS = [dict(model=m, strategy=s, set={"global_batch_size": g})
         for m in ("llama3-8b", "llama2-13b", "qwen2.5-7b")
         for s in ("tp2-pp2-dp2-zero1", "tp1-pp1-dp8-zero1", "tp4-pp1-dp2-zero1-sdp-recompute")
         for g in (32, 64, 128)]


def sweep(threads):
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda kw: trainsim.perf(**kw).to_json(), PLANS * 4))


def test_four_threads_equal_one():
    one = sweep(1)
    assert len(set(one)) == len(PLANS)  # the plans differ
    assert sweep(4) == one


def test_gil_is_released_during_an_estimate():
    # A Python thread keeps ticking while this one runs a long estimate (tens of ms): had the
    # estimate held the GIL, the ticks would stop for its whole length.
    done = threading.Event()
    ticks = []

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=tick)
    t.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        trainsim.perf(**LONG)
        took = time.perf_counter() - start
    finally:
        done.set()
        t.join()
    during = [start] + [x for x in ticks if start < x < start + took] + [start + took]
    longest_gap = max(b - a for a, b in zip(during, during[1:]))
    assert took > 0.02
    assert longest_gap < took / 4


LONG = dict(model="llama3-70b", strategy="tp8-pp8-dp4-zero1", set={"global_batch_size": 65536})
