-- Which kernels cost the job the most GPU time, and on which rank most?
-- The job-wide rows of `kernels DIR` (src/lens/kernels.rs): each rank's
-- `kernels` rows merged by raw name, the mean over every rank of the job
-- (a rank without the kernel counts 0), so the table reads like one
-- rank's; the spread says which rank spends the most in it: a kernel far
-- above its mean on one rank is that rank's problem, not the model's.
--
-- The 20 costliest, one row each, the most time first (ties by name):
--   kernel (short name), category, ms_per_step (mean over the ranks),
--   pct_of_gpu (of all kernels' mean time), count_per_step (mean),
--   min_ms_per_step (0 when some rank did not run it), max_ms_per_step,
--   max_rank (where it cost most; ties: the lowest rank), on_ranks (ranks
--   that ran it), raw_name.
WITH per AS (
  SELECT k.*, ROW_NUMBER() OVER (PARTITION BY raw_name ORDER BY ms_per_step DESC, rank) AS nth
  FROM kernels k
),
job AS (SELECT COUNT(*) AS ranks FROM summary),
merged AS (
  SELECT p.raw_name, MIN(p.kernel) AS kernel, MIN(p.category) AS category,
         SUM(p.ms_per_step) / MIN(j.ranks) AS mean_ms,
         SUM(p.count_per_step) / MIN(j.ranks) AS count_per_step,
         CASE WHEN COUNT(*) < MIN(j.ranks) THEN 0 ELSE MIN(p.ms_per_step) END AS min_ms_per_step,
         MAX(p.ms_per_step) AS max_ms_per_step,
         MIN(CASE WHEN p.nth = 1 THEN p.rank END) AS max_rank,
         COUNT(*) AS on_ranks
  FROM per p CROSS JOIN job j
  GROUP BY p.raw_name
)
SELECT kernel, category, ROUND(mean_ms, 4) AS ms_per_step,
       ROUND(100 * mean_ms / (SELECT SUM(mean_ms) FROM merged), 2) AS pct_of_gpu,
       ROUND(count_per_step, 2) AS count_per_step,
       min_ms_per_step, max_ms_per_step, max_rank, on_ranks, raw_name
FROM merged
ORDER BY ROUND(mean_ms, 4) DESC, kernel
LIMIT 20;
