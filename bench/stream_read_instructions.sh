#!/usr/bin/env bash
# Instructions per streamed read through the gateway's stream path (callgrind), for each source
# tree given: the relay, the recording around it and the ASGI send, without sockets or a client
# (bench/_stream_reads.py: a fake upstream in process, uvloop). One event a read is a stream
# paced by its tokens, as real ones are; EVENTS=5 puts five in each read.
#
#   [EVENTS=1] bash bench/stream_read_instructions.sh TREE [TREE...]
#
# 20 streams of 10 and of 110 reads: the difference of the totals over 2,000 is one read, a turn
# of the loop included (about 7,700 instructions of it: an empty `await asyncio.sleep(0)`).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${EVENTS:-1}
total() {  # TREE READS -> callgrind's total instructions
  PYTHONHASHSEED=0 PYTHONPATH="$1/src" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    .venv/bin/python bench/_stream_reads.py "$2" "$events" 2>&1 >/dev/null |
    sed -n 's/^==[0-9]*== Collected : //p' | head -1
}
for tree in "$@"; do
  few=$(total "$tree" 10)
  many=$(total "$tree" 110)
  echo "$tree: $(( (many - few) / 2000 )) instructions per read of $events event(s)"
done
