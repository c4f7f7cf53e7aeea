-- What bus bandwidth did each kind and size of collective reach?
-- NCCL's bus bandwidth as `collectives DIR` computes it per collective
-- (sql/matched.sql: bytes over the last rank's kernel time, which holds no
-- wait, times the kind's factor for its group size), here summarised per
-- kind and message size. Collectives whose traces record no size (no
-- `In msg nelems` and `dtype` in the kernel's args: older PyTorch) have
-- none and are left out.
--
-- One row per collective kind, message size and dtype, kinds by name and
-- sizes largest first:
--   collective, bytes, dtype, group_n (ranks in its group), calls,
--   busbw_gbps_median, busbw_gbps_min, busbw_gbps_max, algbw_gbps_median,
--   duration_us_median (the transfer).
SELECT collective, bytes, dtype, group_n, COUNT(*) AS calls,
       ROUND(MEDIAN(busbw_gbps), 3) AS busbw_gbps_median,
       MIN(busbw_gbps) AS busbw_gbps_min,
       MAX(busbw_gbps) AS busbw_gbps_max,
       ROUND(MEDIAN(algbw_gbps), 3) AS algbw_gbps_median,
       ROUND(MEDIAN(duration_us), 3) AS duration_us_median
FROM matched
WHERE busbw_gbps IS NOT NULL
GROUP BY collective, bytes, dtype, group_n
ORDER BY collective, bytes DESC, dtype, group_n;
