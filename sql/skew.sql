-- Which collectives did the ranks reach furthest apart, and who came last?
-- The arrival skew of `collectives DIR` (src/lens/collectives.rs): the
-- latest rank's start minus the earliest's, on the ranks' clocks as
-- recorded (sql/matched.sql).
--
-- The 20 largest, one row each, largest first (ties: earliest first):
--   process_group, seq (its position in the group), collective, at_ms (ms
--   after the job's first collective), skew_us, last_rank (the one the
--   others waited for), wait_us (their waits summed: GPU time lost there),
--   duration_us (the transfer: the last rank's kernel time), bytes,
--   busbw_gbps (NULL without message sizes in the traces).
SELECT process_group, seq, collective, at_ms, skew_us, last_rank, wait_us,
       duration_us, bytes, busbw_gbps
FROM matched
ORDER BY skew_us DESC, at_ms, process_group, seq
LIMIT 20;
