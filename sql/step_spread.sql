-- How far apart are the ranks' step times, and which rank is slowest?
-- The job's step is its slowest rank's, as in `summary DIR` (synchronised
-- ranks' steps are nearly equal: a wide spread means ranks that do not
-- wait for each other, or windows that cover different steps).
--
-- One row:
--   ranks, step_ms (the job's: the slowest rank's), step_ms_min,
--   step_ms_median, step_ms_mean, spread_ms (slowest − fastest),
--   spread_pct (of the median), slowest_rank, fastest_rank (ties: the
--   lowest rank), gpu_util (the ranks' busy time over the job's step on
--   every rank, as `summary DIR`: a rank whose own window is shorter
--   idles for the rest of the job's step).
SELECT COUNT(*) AS ranks,
       MAX(step_ms) AS step_ms,
       MIN(step_ms) AS step_ms_min,
       ROUND(MEDIAN(step_ms), 3) AS step_ms_median,
       ROUND(AVG(step_ms), 3) AS step_ms_mean,
       ROUND(MAX(step_ms) - MIN(step_ms), 3) AS spread_ms,
       ROUND(100 * (MAX(step_ms) - MIN(step_ms)) / MEDIAN(step_ms), 1) AS spread_pct,
       MIN(CASE WHEN slow = 1 THEN rank END) AS slowest_rank,
       MIN(CASE WHEN fast = 1 THEN rank END) AS fastest_rank,
       ROUND(SUM(gpu_busy_ms_per_step) / (COUNT(*) * MAX(step_ms)), 3) AS gpu_util
FROM (SELECT rank, step_ms, gpu_busy_ms_per_step,
             ROW_NUMBER() OVER (ORDER BY step_ms DESC, rank) AS slow,
             ROW_NUMBER() OVER (ORDER BY step_ms, rank) AS fast
      FROM summary) s;
