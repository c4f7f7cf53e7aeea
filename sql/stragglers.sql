-- Which ranks do the others wait for, and how much per step?
-- The stragglers of `summary DIR` (src/lens/job.rs, docs/analysis.md §11):
-- the last rank to arrive at a collective is the one the others wait for,
-- and their waits there are what it cost them. A straggler causes waits of
-- at least 1% of the job's step (never under 0.05 ms) per step, and in most
-- steps (the median over its steps, steps without a wait counting 0).
-- Without meaningful waits (one rank, or traces that are not one job's)
-- the rule is compute time: 5% of the step above the median rank's.
--
-- One row per straggler, the most wait caused first:
--   rank, rule ('waits' | 'compute'), threshold_ms (what makes one, ms per
--   step), wait_caused_ms_per_step (the others' waits for it; NULL under
--   the compute rule), late_ms (how much later than the others' median it
--   arrived at its worst collective of a step, mean over steps),
--   late_steps, steps (steps in which it caused the threshold, of its
--   steps), most_at (the collective kind it cost the most wait at) and
--   most_at_ms_per_step, compute_excess_ms (its compute above the median
--   rank's). Why it is late (its lead-in kernels and idle) is in `summary
--   DIR`: the tables hold no lead-ins.
WITH params AS (
  SELECT j.waits_meaningful, j.step_ms,
         GREATEST(0.01 * j.step_ms, 0.05) AS wait_threshold_ms,
         GREATEST(0.05 * j.step_ms, 0.05) AS compute_threshold_ms
  FROM job j
),
ranks AS (
  SELECT rank, GREATEST(steps, 1) AS n, compute_ms,
         ROUND(GREATEST(compute_ms - (SELECT MEDIAN(compute_ms) FROM summary), 0), 3) AS compute_excess_ms
  FROM summary
),
-- The collectives each rank arrived last at while others waited, with how
-- much later than the others' median it arrived.
late AS (
  SELECT m.last_rank AS rank, m.last_step AS step, m.collective, m.wait_us,
         m.skew_us - o.median_arrival_us AS late_us
  FROM matched m
  JOIN (SELECT process_group, seq, MEDIAN(arrival_us) AS median_arrival_us
        FROM arrivals WHERE NOT is_last GROUP BY process_group, seq) o
    ON o.process_group = m.process_group AND o.seq = m.seq
  WHERE m.ranks > 1 AND m.wait_us > 0
),
by_step AS (
  SELECT rank, step, SUM(wait_us) / 1e3 AS wait_ms, GREATEST(MAX(late_us), 0) AS late_us
  FROM late GROUP BY rank, step
),
-- The steps' waits in order, placed after the zeros of the steps without
-- one (padding to the rank's steps), for the median.
placed AS (
  SELECT b.rank, b.wait_ms, GREATEST(b.k, r.n) AS n_all,
         GREATEST(b.k, r.n) - b.k + b.nth AS pos
  FROM (SELECT rank, wait_ms,
               ROW_NUMBER() OVER (PARTITION BY rank ORDER BY wait_ms) - 1 AS nth,
               COUNT(*) OVER (PARTITION BY rank) AS k
        FROM by_step WHERE step IS NOT NULL) b
  JOIN ranks r ON r.rank = b.rank
),
typical AS (
  SELECT p.rank, MAX(p.n_all) AS steps,
         (COALESCE(SUM(CASE WHEN p.pos = FLOOR((p.n_all - 1) / 2) THEN p.wait_ms END), 0)
          + COALESCE(SUM(CASE WHEN p.pos = FLOOR(p.n_all / 2) THEN p.wait_ms END), 0)) / 2 AS median_ms,
         CAST(SUM(CASE WHEN p.wait_ms >= x.wait_threshold_ms THEN 1 ELSE 0 END) AS BIGINT) AS late_steps
  FROM placed p CROSS JOIN params x
  GROUP BY p.rank
),
most AS (
  SELECT rank, collective, wait_ms,
         ROW_NUMBER() OVER (PARTITION BY rank ORDER BY wait_ms DESC, collective) AS nth
  FROM (SELECT rank, collective, SUM(wait_us) / 1e3 AS wait_ms FROM late GROUP BY rank, collective) k
),
by_waits AS (
  SELECT c.rank, 'waits' AS rule, x.wait_threshold_ms AS threshold_ms,
         c.wait_ms / r.n AS caused_ms_per_step, c.late_ms,
         t.late_steps, t.steps, k.collective AS most_at, k.wait_ms / r.n AS most_at_ms_per_step,
         r.compute_excess_ms, COALESCE(t.median_ms, c.wait_ms / r.n) AS typical_ms
  FROM (SELECT rank, SUM(wait_ms) AS wait_ms, SUM(late_us) / COUNT(*) / 1e3 AS late_ms
        FROM by_step GROUP BY rank) c
  JOIN ranks r ON r.rank = c.rank
  JOIN most k ON k.rank = c.rank AND k.nth = 1
  LEFT JOIN typical t ON t.rank = c.rank
  CROSS JOIN params x
  WHERE x.waits_meaningful
),
by_compute AS (
  SELECT r.rank, 'compute' AS rule, x.compute_threshold_ms AS threshold_ms,
         CAST(NULL AS DOUBLE) AS caused_ms_per_step, CAST(NULL AS DOUBLE) AS late_ms,
         CAST(NULL AS BIGINT) AS late_steps, CAST(NULL AS BIGINT) AS steps,
         CAST(NULL AS VARCHAR(64)) AS most_at, CAST(NULL AS DOUBLE) AS most_at_ms_per_step,
         r.compute_excess_ms, CAST(NULL AS DOUBLE) AS typical_ms
  FROM ranks r CROSS JOIN params x
  WHERE NOT x.waits_meaningful
    AND r.compute_ms - (SELECT MEDIAN(compute_ms) FROM summary) > x.compute_threshold_ms
)
SELECT rank, rule, ROUND(threshold_ms, 3) AS threshold_ms,
       ROUND(caused_ms_per_step, 3) AS wait_caused_ms_per_step, ROUND(late_ms, 3) AS late_ms,
       late_steps, steps, most_at, ROUND(most_at_ms_per_step, 3) AS most_at_ms_per_step,
       compute_excess_ms
FROM (SELECT * FROM by_waits
      WHERE caused_ms_per_step >= threshold_ms AND typical_ms >= threshold_ms
      UNION ALL
      SELECT * FROM by_compute) s
ORDER BY COALESCE(caused_ms_per_step, compute_excess_ms) DESC, rank;
