-- The job and its collectives matched across the ranks, as `summary DIR`
-- and `collectives DIR` compute them (src/lens/collectives.rs,
-- docs/analysis.md §11); the question files build on these three views.
-- Read after sql/tables.sql (DuckDB: `.read sql/matched.sql`).
--
-- Ranks match by process group and position: the k-th collective of a
-- group on one rank is the k-th on every rank (`seq`, numbered by each
-- rank alone), and a rank whose k-th is another kind is left out of it.
-- An NCCL kernel starts when its rank arrives and ends once every rank
-- has, so the arrival is `start_ns`, on each rank's clock as recorded (the
-- job view aligns nothing: ranks of one job share a clock, and
-- `job.waits_meaningful` is false when they do not look as if they do).

-- arrivals: one row per collective and rank. process_group, seq,
-- collective, rank, step (the rank's step number), arrival_us (after the
-- earliest rank), wait_us (for the last rank; 0 on one rank), dur_us (its
-- kernel time), end_ns, last_rank, last_start_ns, is_last.
CREATE OR REPLACE TEMPORARY VIEW arrivals AS
WITH numbered AS (
  SELECT c.*, ROW_NUMBER() OVER (PARTITION BY process_group, seq ORDER BY rank) AS nth
  FROM collectives c
),
-- The lowest rank's kind is the collective's; a rank of another kind there
-- recorded another sequence and is not matched.
same AS (
  SELECT n.* FROM numbered n
  JOIN numbered f ON f.process_group = n.process_group AND f.seq = n.seq AND f.nth = 1
                 AND f.collective = n.collective
),
ordered AS (
  SELECT s.*,
         MIN(start_ns) OVER (PARTITION BY process_group, seq) AS earliest_ns,
         ROW_NUMBER() OVER (PARTITION BY process_group, seq ORDER BY start_ns DESC, rank) AS from_last
  FROM same s
)
SELECT o.process_group, o.seq, o.collective, o.rank, o.step,
       (o.start_ns - o.earliest_ns) / 1e3 AS arrival_us,
       CASE WHEN j.ranks > 1 THEN (l.start_ns - o.start_ns) / 1e3 ELSE 0 END AS wait_us,
       o.duration_us AS dur_us,
       o.start_ns + ROUND(o.duration_us * 1e3) AS end_ns,
       o.earliest_ns, o.nth,
       l.rank AS last_rank, l.start_ns AS last_start_ns, l.step AS last_step,
       l.duration_us AS last_dur_us, o.from_last = 1 AS is_last
FROM ordered o
JOIN ordered l ON l.process_group = o.process_group AND l.seq = o.seq AND l.from_last = 1
CROSS JOIN (SELECT COUNT(*) AS ranks FROM summary) j;

-- job: one row. ranks; step_ms (the slowest rank's step, the job's);
-- n_ranks (the world size, or the ranks present when more); matched,
-- disjoint (collectives, and those some rank ended before the last one
-- began); waits_meaningful (two or more ranks, and at most half of the
-- collectives disjoint: otherwise the traces are not one job's).
CREATE OR REPLACE TEMPORARY VIEW job AS
SELECT s.ranks, s.step_ms, s.n_ranks, c.matched, c.disjoint,
       s.ranks > 1 AND c.matched > 0 AND 2 * c.disjoint <= c.matched AS waits_meaningful
FROM (SELECT COUNT(*) AS ranks, MAX(step_ms) AS step_ms,
             GREATEST(COALESCE(MAX(world_size), 0), COUNT(*)) AS n_ranks
      FROM summary) s
CROSS JOIN (SELECT COUNT(*) AS matched,
                   CAST(COALESCE(SUM(CASE WHEN disjoint THEN 1 ELSE 0 END), 0) AS BIGINT) AS disjoint
            FROM (SELECT MAX(CASE WHEN end_ns < last_start_ns THEN 1 ELSE 0 END) = 1 AS disjoint
                  FROM arrivals GROUP BY process_group, seq) d) c;

-- matched: one row per collective, as `collectives DIR --json` has them.
-- process_group, seq, collective, ranks (present at it), at_ms (the
-- earliest start, after the job's first collective), skew_us (latest −
-- earliest start; NULL on one rank), last_rank (NULL on one rank),
-- last_step (the last rank's step number), wait_us (the ranks' waits
-- summed), duration_us (the transfer: the last rank's kernel time, which
-- holds no wait), bytes, dtype, group_n (ranks in its group), algbw_gbps
-- (bytes ÷ duration), busbw_gbps (× NCCL's bus factor for its kind and
-- group size, nccl-tests' PERFORMANCE.md). Figures rounded as the JSON is.
CREATE OR REPLACE TEMPORARY VIEW matched AS
WITH m AS (
  SELECT a.process_group, a.seq,
         MIN(a.collective) AS collective,
         COUNT(*) AS ranks,
         MIN(a.earliest_ns) AS earliest_ns,
         MAX(a.last_start_ns) - MIN(a.earliest_ns) AS skew_ns,
         MIN(a.last_rank) AS last_rank,
         MIN(a.last_step) AS last_step,
         SUM(a.wait_us) AS wait_us,
         MIN(a.last_dur_us) AS duration_us,
         MIN(CASE WHEN a.nth = 1 THEN c.bytes END) AS bytes,
         MIN(CASE WHEN a.nth = 1 THEN c.dtype END) AS dtype,
         MIN(CASE WHEN a.nth = 1 THEN c.group_size END) AS group_size
  FROM arrivals a
  JOIN collectives c ON c.process_group = a.process_group AND c.seq = a.seq AND c.rank = a.rank
  GROUP BY a.process_group, a.seq
),
sized AS (
  SELECT m.*, COALESCE(m.group_size, j.n_ranks) AS group_n, j.ranks AS job_ranks,
         CASE WHEN m.bytes IS NOT NULL AND m.duration_us > 0
              THEN m.bytes / (m.duration_us * 1e3) END AS algbw
  FROM m CROSS JOIN job j
)
SELECT process_group, seq, collective, ranks,
       ROUND((earliest_ns - (SELECT MIN(start_ns) FROM collectives)) / 1e6, 3) AS at_ms,
       CASE WHEN job_ranks > 1 THEN ROUND(skew_ns / 1e3, 3) END AS skew_us,
       CASE WHEN job_ranks > 1 THEN last_rank END AS last_rank,
       last_step,
       ROUND(wait_us, 3) AS wait_us,
       ROUND(duration_us, 3) AS duration_us,
       bytes, dtype, group_n,
       ROUND(algbw, 3) AS algbw_gbps,
       ROUND(algbw * CASE
         WHEN collective LIKE '%allreduce%' THEN 2.0 * (group_n - 1) / group_n
         WHEN collective LIKE '%allgather%' OR collective LIKE '%reducescatter%'
           OR collective LIKE '%alltoall%' THEN (group_n - 1.0) / group_n
         WHEN collective LIKE '%broadcast%' OR collective = 'reduce'
           OR collective LIKE '%sendrecv%' OR collective IN ('send', 'recv') THEN 1.0
       END, 3) AS busbw_gbps
FROM sized;
