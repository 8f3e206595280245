/// Functions PostgreSQL runs server-side, so a hot path is one round trip instead of a dozen.
///
/// `herald_admit_send_v1`, and `herald_batch_v8`'s admissions, are `SQLStore.admitSend` (the
/// statements in SQLStore+Sends.swift and SQLStore+RateLimits.swift, and `PrefixVelocity.observe`)
/// step for step: block check, GCRA in key order all or nothing, prefix velocity under the prefix's
/// advisory lock, session and ledger row. Their plans are prepared once per connection (PL/pgSQL
/// caches them). The store conformance suite runs the same cases against them, SQLite and the memory
/// model.

///
/// Every routine runs with `enable_seqscan = off`. PL/pgSQL caches a generic plan per connection after
/// a few calls, planned against the table as it was then: on a fresh schema `rate_limits` is a page or
/// two, the cached plan scans it, and it keeps scanning while the table grows to tens of thousands of
/// rows, until autovacuum's ANALYZE invalidates the plan a minute or more later. Measured: one
/// herald-api on a fresh PostgreSQL schema did 1,100 sends/s with PostgreSQL at 80 % of a core
/// (1,095 sequential scans reading 17 M rows in 30 s); with the setting, 4,100 sends/s. Every statement
/// here finds its rows by key, so an index is always the right plan.
///
/// The version is part of the name: every process re-creates its routines when it migrates (under the
/// migration lock), so during a rolling upgrade old and new builds each call their own.
enum PostgresRoutines {
    static let all = [refund, admitSend, batch]

    /// Gives back one event of each spent limit (`p_limits` rows `[key, interval, tolerance]`, by index).
    static let refund = """
        CREATE OR REPLACE FUNCTION herald_refund_v1(p_limits jsonb, p_spent integer[], p_now_us bigint) RETURNS void
        LANGUAGE plpgsql SET enable_seqscan = off AS $fn$
        DECLARE
          v_index integer;
        BEGIN
          FOREACH v_index IN ARRAY p_spent LOOP
            UPDATE rate_limits SET tat_us = GREATEST(p_now_us, tat_us - (p_limits->v_index->>1)::bigint) WHERE key = p_limits->v_index->>0;
          END LOOP;
        END
        $fn$
        """

    /// Several hot-path operations in one transaction, one round trip (`PostgresBatcher`):
    /// - `admit`: with `firstFactorOnly`, verdict secondFactor when the number is the first factor of a
    ///   user with an SMS second factor (v4, schema 10: this check was a round trip of its own); else
    ///   verdict admitted, refused, tripped or blocked; n1 refused index, n2 refused TAT, n3 Retry-After,
    ///   n4 block end, n5 block start (µs), note the block reason. A duplicate id fails the whole batch,
    ///   which the batcher then runs op by op (v1 gave each admission a savepoint instead: a
    ///   subtransaction per send, and past 64 of them in one transaction every other backend's visibility
    ///   checks go through pg_subtrans, which is how two APIs' batches fell to 900 sends/s).
    /// - `claim`: a worker claims a job (`SQLStore.claimDelivery`); verdict claimed (n1 attempt), unknown,
    ///   mismatch (note: the field; the producer is one, so a job is claimed only under the producer
    ///   whose ledger row it is), inDoubt (note: the owner) or finished (note: the status).
    /// - `record`: a job's outcome, with its segments when sent and the provider's message id; never over
    ///   delivered or undelivered, and `uncertain` only over `sending` (v6, see `SQLStore.recordDelivery`).
    /// Claims and records also append the message's event line (`MessageEvent.storedLine`); v3 (schema 6)
    /// added that, the worker's description of the job, and `throttled` as a claimable status.
    ///
    /// Concurrent calls share the transaction and its commit's flush. Every limit row and prefix lock the
    /// batch's admissions may take is taken first, keys in byte order then prefixes: batches of several
    /// processes then wait for each other but never in a cycle (v1 locked per admission, deadlocked, and
    /// waited out PostgreSQL's 1 s deadlock timeout). A missing limit row is created with TAT 0, which
    /// GCRA reads as "no history" (a policy's tolerance is at least one interval, so a fresh key allows
    /// its first event as an inserted row would), so a concurrent first use of a key cannot slip between
    /// the lock and the write.
    ///
    /// From three admissions on, the routine reads those rows once, when it locks them, decides the batch's
    /// admissions on the values in hand (arrays `k_keys`/`k_tats`, and the same for the prefixes'
    /// velocity), and writes each row once at the end, after the admitted sends' sessions and ledger
    /// rows, which go in as one statement each (a batch of 11 takes about a tenth less per call in pgbench
    /// than with one insert per send; no difference at 4). One or two admissions run
    /// `herald_admit_send_v1` each: reading, locking and writing back costs a lock record and
    /// a second write per row, which only pays when rows are shared (pgbench, function time per batch of
    /// 1, 2, 4 and 11 fresh numbers: 0.42, 0.75, 1.45, 2.43 ms that way; 0.60, 0.96, 0.94, 1.56 ms in
    /// memory). Writing every key of every send would give the project, country and client-address rows a
    /// new version per send, and any snapshot held meanwhile on the database (a report, a `pg_dump`, a
    /// transaction left open) keeps those versions from being pruned, so every later update walks a
    /// longer chain: in pgbench, batches of 11 admissions beside one 9 s statement took almost four
    /// times as long per batch that way. Admissions still decide in batch order with the same arithmetic as one statement per key,
    /// refunds included (a refused or tripped send gives back what it spent, `GREATEST(now, tat − T)`),
    /// so the store conformance suite's memory model still predicts every verdict.
    ///
    /// Claims and outcomes go first as two set-based UPDATEs (v5): one statement for all of a draining
    /// worker's claims and one for its outcomes, instead of one executor start per operation (measured
    /// on 40- and 100-operation batches: about a quarter less time per operation). Only operations
    /// whose job appears once in the batch, and claims that succeed, are answered there; everything
    /// else (admissions, a job twice in one batch, a claim that finds the job finished, in doubt or
    /// mismatched) runs in the loop below in batch order, as in v4. Answers one row per operation, in
    /// no particular order (the batcher reads `idx`).
    static let batch = """
        CREATE OR REPLACE FUNCTION herald_batch_v8(p_ops jsonb)
        RETURNS TABLE (idx integer, verdict text, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, note text)
        LANGUAGE plpgsql SET enable_seqscan = off AS $fn$
        DECLARE
          v_op record;
          v jsonb;
          r record;
          v_attempts bigint;
          v_done integer[];
          v_verdicts text[];
          v_attempt_counts bigint[];
          -- The limit rows of the admissions: key, TAT as decided so far, and whether it changed.
          v_keys text[];
          k_keys text[];
          k_tats bigint[];
          k_dirty boolean[];
          -- The prefix velocity rows of the admissions, read when first needed.
          p_projects text[] := '{}';
          p_prefixes text[] := '{}';
          p_starts bigint[] := '{}';
          p_counts bigint[] := '{}';
          p_baselines double precision[] := '{}';
          -- One admission.
          v_now bigint;
          v_entry record;
          v_at integer;
          v_next bigint;
          v_spent_at integer[];
          v_spent_t bigint[];
          v_window bigint;
          v_start bigint;
          v_sends bigint;
          v_baseline double precision;
          v_elapsed bigint;
          v_factor double precision;
          v_index integer;
          v_admits bigint;
          v_in_memory boolean;
          v_admitted integer[] := '{}';
        BEGIN
          v_admits := (SELECT count(*) FROM jsonb_array_elements(p_ops) o WHERE o.value->>'op' = 'admit');
          -- One admission locks in key order by itself (herald_admit_send_v1); several lock here first.
          IF v_admits >= 2 THEN
            v_keys := ARRAY(
              SELECT DISTINCT l.value->>0 FROM jsonb_array_elements(p_ops) o, jsonb_array_elements(o.value->'limits') l
              WHERE o.value->>'op' = 'admit');
            -- Until every key is read: a row deleted between the insert and the lock (by an operator
            -- reset) is created again.
            LOOP
              INSERT INTO rate_limits (key, tat_us) SELECT k, 0 FROM unnest(v_keys) k ORDER BY k COLLATE "C" ON CONFLICT (key) DO NOTHING;
              -- = ANY(array), not IN (…): the planner would guess 10,000 rows for the JSON and scan the table.
              SELECT COALESCE(array_agg(locked.key), '{}'), COALESCE(array_agg(locked.tat_us), '{}') INTO k_keys, k_tats
                FROM (SELECT l.key, l.tat_us FROM rate_limits l WHERE l.key = ANY (v_keys) ORDER BY l.key COLLATE "C" FOR UPDATE) locked;
              EXIT WHEN cardinality(k_keys) = cardinality(v_keys);
            END LOOP;
            PERFORM count(pg_advisory_xact_lock(hashtextextended('prefix_velocity:' || s.p, 0))) FROM (
              SELECT d.p FROM (
                SELECT DISTINCT o.value->>'project' || ':' || (o.value->>'prefix') AS p FROM jsonb_array_elements(p_ops) o
                WHERE o.value->>'op' = 'admit' AND o.value->>'windowUs' IS NOT NULL) d
              ORDER BY d.p COLLATE "C") s;
          END IF;
          -- From three admissions on, decided on the rows just read; one or two run herald_admit_send_v1 each.
          v_in_memory := v_admits >= 3;
          IF v_in_memory THEN
            k_dirty := array_fill(false, ARRAY[cardinality(k_keys)]);
          END IF;
          v_done := '{}';
          -- A worker's batch (herald-api's hold admissions only and skip this).
          IF jsonb_path_exists(p_ops, '$[*] ? (@.op == "claim" || @.op == "record")') THEN
            WITH ops AS (
              SELECT (e.ordinality - 1)::integer AS i, e.value AS v, count(*) OVER (PARTITION BY e.value->>'jobId') AS uses
              FROM jsonb_array_elements(p_ops) WITH ORDINALITY AS e WHERE e.value->>'op' IN ('claim', 'record')
            ), claimed AS (
              UPDATE deliveries d SET status = 'sending', owner = c.v->>'owner', attempts = d.attempts + 1, updated_at_ms = (c.v->>'nowMs')::bigint,
                  template = COALESCE(c.v->>'template', d.template), locale = COALESCE(c.v->>'locale', d.locale),
                  provider = COALESCE(c.v->>'provider', d.provider),
                  events = COALESCE(d.events, '') || (c.v->>'eventHead') || (d.attempts + 1)::text || (c.v->>'eventTail')
                FROM ops c
                WHERE c.uses = 1 AND c.v->>'op' = 'claim'
                  AND d.job_id = c.v->>'jobId' AND d.project_id = c.v->>'project' AND d.type = c.v->>'type' AND d.destination = c.v->>'to'
                  AND d.producer IS NOT DISTINCT FROM c.v->>'producer'
                  AND (d.status IN ('pending', 'retrying', 'throttled') OR (d.status = 'sending' AND (c.v->>'reclaim')::boolean))
                RETURNING c.i, d.attempts
            ), recorded AS (
              UPDATE deliveries d SET status = CASE WHEN d.status IN ('delivered', 'undelivered') THEN d.status
                    WHEN o.v->>'status' = 'uncertain' AND d.status <> 'sending' THEN d.status ELSE o.v->>'status' END,
                  reason = CASE WHEN d.status IN ('delivered', 'undelivered') THEN d.reason
                    WHEN o.v->>'status' = 'uncertain' AND d.status <> 'sending' THEN d.reason ELSE o.v->>'reason' END,
                  updated_at_ms = (o.v->>'nowMs')::bigint,
                  segments = COALESCE((o.v->>'segments')::bigint, d.segments), encoding = COALESCE(o.v->>'encoding', d.encoding),
                  provider_message_id = COALESCE(o.v->>'providerMessageId', d.provider_message_id),
                  events = COALESCE(d.events, '') || (o.v->>'event')
                FROM ops o
                WHERE o.uses = 1 AND o.v->>'op' = 'record' AND d.job_id = o.v->>'jobId'
                RETURNING o.i
            ), answered AS (
              SELECT claimed.i, 'claimed' AS verdict, claimed.attempts FROM claimed
              UNION ALL
              SELECT recorded.i, 'done', NULL::bigint FROM recorded
            )
            SELECT COALESCE(array_agg(a.i), '{}'), array_agg(a.verdict), array_agg(a.attempts)
              INTO v_done, v_verdicts, v_attempt_counts FROM answered a;
            RETURN QUERY SELECT u.i, u.verdict, u.attempts, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::text
              FROM unnest(v_done, v_verdicts, v_attempt_counts) AS u(i, verdict, attempts);
          END IF;
          -- Left for the loop: admissions, jobs named twice, claims the UPDATE did not take, and records of
          -- jobs not in the ledger (which update nothing there either and are answered done, as in v4).
          FOR v_op IN SELECT (e.ordinality - 1)::integer AS i, e.value AS body FROM jsonb_array_elements(p_ops) WITH ORDINALITY AS e
              WHERE NOT ((e.ordinality - 1)::integer = ANY (v_done)) LOOP
            v := v_op.body;
            idx := v_op.i;
            verdict := NULL; n1 := NULL; n2 := NULL; n3 := NULL; n4 := NULL; n5 := NULL; note := NULL;
            CASE v->>'op'
            WHEN 'claim' THEN
              UPDATE deliveries d SET status = 'sending', owner = v->>'owner', attempts = d.attempts + 1, updated_at_ms = (v->>'nowMs')::bigint,
                  template = COALESCE(v->>'template', d.template), locale = COALESCE(v->>'locale', d.locale),
                  provider = COALESCE(v->>'provider', d.provider),
                  events = COALESCE(d.events, '') || (v->>'eventHead') || (d.attempts + 1)::text || (v->>'eventTail')
                WHERE d.job_id = v->>'jobId' AND d.project_id = v->>'project' AND d.type = v->>'type' AND d.destination = v->>'to'
                  AND d.producer IS NOT DISTINCT FROM v->>'producer'
                  AND (d.status IN ('pending', 'retrying', 'throttled') OR (d.status = 'sending' AND (v->>'reclaim')::boolean))
                RETURNING d.attempts INTO v_attempts;
              IF FOUND THEN
                verdict := 'claimed';
                n1 := v_attempts;
              ELSE
                SELECT d.status, d.owner, d.project_id, d.type, d.destination, d.producer INTO r FROM deliveries d WHERE d.job_id = v->>'jobId';
                IF NOT FOUND THEN
                  verdict := 'unknown';
                ELSIF r.project_id <> v->>'project' THEN
                  verdict := 'mismatch'; note := 'project';
                ELSIF r.type <> v->>'type' THEN
                  verdict := 'mismatch'; note := 'type';
                ELSIF r.destination <> v->>'to' THEN
                  verdict := 'mismatch'; note := 'to';
                ELSIF r.producer IS DISTINCT FROM v->>'producer' THEN
                  verdict := 'mismatch'; note := 'producer';
                ELSIF r.status = 'sending' THEN
                  verdict := 'inDoubt'; note := COALESCE(r.owner, 'unknown');
                ELSE
                  verdict := 'finished'; note := r.status;
                END IF;
              END IF;
            WHEN 'record' THEN
              UPDATE deliveries SET status = CASE WHEN status IN ('delivered', 'undelivered') THEN status
                    WHEN v->>'status' = 'uncertain' AND status <> 'sending' THEN status ELSE v->>'status' END,
                  reason = CASE WHEN status IN ('delivered', 'undelivered') THEN reason
                    WHEN v->>'status' = 'uncertain' AND status <> 'sending' THEN reason ELSE v->>'reason' END,
                  updated_at_ms = (v->>'nowMs')::bigint,
                  segments = COALESCE((v->>'segments')::bigint, segments), encoding = COALESCE(v->>'encoding', encoding),
                  provider_message_id = COALESCE(v->>'providerMessageId', provider_message_id),
                  events = COALESCE(events, '') || (v->>'event')
                WHERE job_id = v->>'jobId';
              verdict := 'done';
            ELSE
              IF (v->>'firstFactorOnly')::boolean AND EXISTS (
                  SELECT 1 FROM users u JOIN mfa_enrollments m ON m.project_id = u.project_id AND m.local_id = u.local_id
                  WHERE u.project_id = v->>'project' AND u.phone_number = v->>'phone') THEN
                verdict := 'secondFactor';
                RETURN NEXT;
                CONTINUE;
              END IF;
              IF NOT v_in_memory THEN
                SELECT * INTO r FROM herald_admit_send_v1(
                  v->>'project', v->>'prefix', (v->>'nowUs')::bigint, (v->'limits')::text,
                  (v->>'windowUs')::bigint, (v->>'multiple')::double precision, (v->>'minSends')::bigint, (v->>'blockUs')::bigint,
                  (v->>'smoothing')::double precision, v->>'windowText',
                  v->>'id', v->>'phone', decode(v->>'codeHash', 'hex'), (v->>'createdMs')::bigint, (v->>'expiresMs')::bigint,
                  (v->>'maxAttempts')::bigint, v->>'jobId', v->>'region', v->>'infoSealed', v->>'clientKey', v->>'credentialHash',
                  v->>'purpose', v->>'codeSealed');
                verdict := r.verdict; n1 := r.refused_index; n2 := r.refused_tat; n3 := r.retry_after;
                n4 := r.block_until; n5 := r.block_created; note := r.block_reason;
                RETURN NEXT;
                CONTINUE;
              END IF;
              v_now := (v->>'nowUs')::bigint;
              SELECT b.until_us, b.created_us, b.reason INTO n4, n5, note
                FROM prefix_blocks b WHERE b.project_id = v->>'project' AND b.prefix = v->>'prefix' AND b.until_us > v_now;
              IF FOUND THEN
                verdict := 'blocked';
                RETURN NEXT;
                CONTINUE;
              END IF;
              n4 := NULL; n5 := NULL; note := NULL;

              -- GCRA in key order (byte order, as Swift orders ASCII keys); only entries before a refusal
              -- need deciding. Allowed when the TAT it would leave is within the tolerance of now.
              v_spent_at := '{}';
              v_spent_t := '{}';
              FOR v_entry IN
                SELECT (e.ordinality - 1)::integer AS i, e.value->>0 AS key, (e.value->>1)::bigint AS t, (e.value->>2)::bigint AS tau
                FROM jsonb_array_elements(v->'limits') WITH ORDINALITY AS e ORDER BY (e.value->>0) COLLATE "C", e.ordinality
              LOOP
                CONTINUE WHEN n1 IS NOT NULL AND v_entry.i >= n1;
                v_at := array_position(k_keys, v_entry.key);
                v_next := GREATEST(k_tats[v_at], v_now) + v_entry.t;
                IF v_next - v_now <= v_entry.tau THEN
                  k_tats[v_at] := v_next;
                  k_dirty[v_at] := true;
                  v_spent_at := v_spent_at || v_at;
                  v_spent_t := v_spent_t || v_entry.t;
                ELSE
                  n1 := v_entry.i;
                  n2 := k_tats[v_at];
                  n3 := GREATEST(k_tats[v_at], v_now) + v_entry.t - v_entry.tau - v_now;
                END IF;
              END LOOP;
              IF n1 IS NOT NULL THEN
                verdict := 'refused';
              ELSIF v->>'windowUs' IS NOT NULL THEN
                v_window := GREATEST(1, (v->>'windowUs')::bigint);
                v_at := NULL;
                FOR v_index IN 1 .. cardinality(p_projects) LOOP
                  IF p_projects[v_index] = v->>'project' AND p_prefixes[v_index] = v->>'prefix' THEN
                    v_at := v_index;
                    EXIT;
                  END IF;
                END LOOP;
                IF v_at IS NULL THEN
                  SELECT pv.window_start_us, pv.count, pv.baseline INTO v_start, v_sends, v_baseline
                    FROM prefix_velocity pv WHERE pv.project_id = v->>'project' AND pv.prefix = v->>'prefix';
                  IF NOT FOUND THEN
                    v_start := v_now - v_now % v_window;
                    v_sends := 0;
                    v_baseline := 0;
                  END IF;
                  p_projects := p_projects || (v->>'project');
                  p_prefixes := p_prefixes || (v->>'prefix');
                  p_starts := p_starts || v_start;
                  p_counts := p_counts || v_sends;
                  p_baselines := p_baselines || v_baseline;
                  v_at := cardinality(p_projects);
                END IF;
                v_start := p_starts[v_at];
                v_sends := p_counts[v_at];
                v_baseline := p_baselines[v_at];
                IF v_now >= v_start + v_window THEN
                  v_elapsed := (v_now - v_start) / v_window;
                  v_baseline := v_baseline + (v->>'smoothing')::double precision * (v_sends::double precision - v_baseline);
                  IF v_elapsed > 1 THEN
                    v_factor := 1.0;
                    FOR v_index IN 1 .. LEAST(v_elapsed, 10000) - 1 LOOP
                      v_factor := v_factor * (1 - (v->>'smoothing')::double precision);
                    END LOOP;
                    v_baseline := v_baseline * v_factor;
                  END IF;
                  v_start := v_start + v_elapsed * v_window;
                  v_sends := 0;
                END IF;
                v_sends := v_sends + 1;
                p_starts[v_at] := v_start;
                p_counts[v_at] := v_sends;
                p_baselines[v_at] := v_baseline;
                IF v_sends::double precision > GREATEST((v->>'minSends')::double precision, (v->>'multiple')::double precision * v_baseline) THEN
                  n4 := v_now + (v->>'blockUs')::bigint;
                  n5 := v_now;
                  note := format('%s sends in %s against a baseline of %s per window', v_sends, v->>'windowText', to_char(v_baseline, 'FM999999999990.0'));
                  INSERT INTO prefix_blocks (project_id, prefix, until_us, reason, created_us) VALUES (v->>'project', v->>'prefix', n4, note, n5)
                    ON CONFLICT (project_id, prefix) DO UPDATE SET until_us = excluded.until_us, reason = excluded.reason, created_us = excluded.created_us;
                  verdict := 'tripped';
                END IF;
              END IF;
              -- Refused or tripped: what it spent goes back.
              IF verdict IS NOT NULL THEN
                FOR v_index IN 1 .. cardinality(v_spent_at) LOOP
                  k_tats[v_spent_at[v_index]] := GREATEST(v_now, k_tats[v_spent_at[v_index]] - v_spent_t[v_index]);
                END LOOP;
                RETURN NEXT;
                CONTINUE;
              END IF;

              -- Its session and ledger row go in with the others admitted, after the loop.
              v_admitted := v_admitted || idx;
              verdict := 'admitted';
            END CASE;
            RETURN NEXT;
          END LOOP;
          -- The sessions and ledger rows of the admitted, as two statements (nothing in the loop reads
          -- them). A duplicate id fails the whole call here as it did in the loop.
          IF cardinality(v_admitted) > 0 THEN
            INSERT INTO verification_sessions
              (id, project_id, phone_number, code_hash, created_at_ms, expires_at_ms, attempts, max_attempts, consumed_at_ms, job_id, region,
               session_info_sealed, client_key, credential_hash, purpose, code_sealed)
              SELECT a.v->>'id', a.v->>'project', a.v->>'phone', decode(a.v->>'codeHash', 'hex'), (a.v->>'createdMs')::bigint,
                (a.v->>'expiresMs')::bigint, 0, (a.v->>'maxAttempts')::bigint, NULL, a.v->>'jobId', a.v->>'region', a.v->>'infoSealed',
                a.v->>'clientKey', a.v->>'credentialHash', a.v->>'purpose', a.v->>'codeSealed'
              FROM (SELECT p_ops->n AS v, n FROM unnest(v_admitted) AS n) a ORDER BY a.n;
            INSERT INTO deliveries (job_id, project_id, type, destination, status, attempts, created_at_ms, updated_at_ms)
              SELECT a.v->>'jobId', a.v->>'project', 'sms', a.v->>'phone', 'pending', 0, (a.v->>'createdMs')::bigint, (a.v->>'createdMs')::bigint
              FROM (SELECT p_ops->n AS v, n FROM unnest(v_admitted) AS n) a WHERE a.v->>'jobId' IS NOT NULL ORDER BY a.n
              ON CONFLICT (job_id) DO NOTHING;
          END IF;
          -- Each row the admissions changed, written once.
          IF v_in_memory THEN
            UPDATE rate_limits l SET tat_us = u.tat FROM unnest(k_keys, k_tats, k_dirty) AS u(key, tat, dirty)
              WHERE u.dirty AND l.key = u.key;
          END IF;
          IF cardinality(p_projects) > 0 THEN
            INSERT INTO prefix_velocity (project_id, prefix, window_start_us, count, baseline)
              SELECT * FROM unnest(p_projects, p_prefixes, p_starts, p_counts, p_baselines)
              ON CONFLICT (project_id, prefix) DO UPDATE SET
                window_start_us = excluded.window_start_us, count = excluded.count, baseline = excluded.baseline;
          END IF;
        END
        $fn$
        """

    static let admitSend = """
        CREATE OR REPLACE FUNCTION herald_admit_send_v1(
          p_project text, p_prefix text, p_now_us bigint, p_limits text,
          p_window_us bigint, p_multiple double precision, p_min_sends bigint, p_block_us bigint, p_smoothing double precision,
          p_window_text text,
          p_id text, p_phone text, p_code_hash bytea, p_created_ms bigint, p_expires_ms bigint, p_max_attempts bigint, p_job_id text,
          p_region text, p_info_sealed text, p_client_key text, p_credential_hash text, p_purpose text, p_code_sealed text,
          OUT verdict text, OUT refused_index integer, OUT refused_tat bigint, OUT retry_after bigint,
          OUT block_until bigint, OUT block_reason text, OUT block_created bigint)
        LANGUAGE plpgsql SET enable_seqscan = off AS $fn$
        DECLARE
          v_limits jsonb := p_limits::jsonb;
          v_entry record;
          v_spent integer[] := '{}';
          v_index integer;
          v_tat bigint;
          v_window bigint;
          v_start bigint;
          v_sends bigint;
          v_baseline double precision;
          v_elapsed bigint;
          v_factor double precision;
        BEGIN
          SELECT b.until_us, b.reason, b.created_us INTO block_until, block_reason, block_created
            FROM prefix_blocks b WHERE b.project_id = p_project AND b.prefix = p_prefix AND b.until_us > p_now_us;
          IF FOUND THEN
            verdict := 'blocked';
            RETURN;
          END IF;
          block_until := NULL;

          -- Rows locked in key order (byte order, as Swift orders ASCII keys); only entries before a refusal need deciding.
          FOR v_entry IN
            SELECT (e.ordinality - 1)::integer AS idx, e.value->>0 AS key, (e.value->>1)::bigint AS t, (e.value->>2)::bigint AS tau
            FROM jsonb_array_elements(v_limits) WITH ORDINALITY AS e ORDER BY (e.value->>0) COLLATE "C"
          LOOP
            CONTINUE WHEN refused_index IS NOT NULL AND v_entry.idx >= refused_index;
            INSERT INTO rate_limits AS r (key, tat_us) VALUES (v_entry.key, p_now_us + v_entry.t)
              ON CONFLICT (key) DO UPDATE SET tat_us = GREATEST(r.tat_us, p_now_us) + v_entry.t
              WHERE GREATEST(r.tat_us, p_now_us) + v_entry.t - p_now_us <= v_entry.tau
              RETURNING r.tat_us INTO v_tat;
            IF FOUND THEN
              v_spent := v_spent || v_entry.idx;
            ELSE
              SELECT r.tat_us INTO v_tat FROM rate_limits r WHERE r.key = v_entry.key;
              v_tat := COALESCE(v_tat, p_now_us);
              refused_index := v_entry.idx;
              refused_tat := v_tat;
              retry_after := GREATEST(v_tat, p_now_us) + v_entry.t - v_entry.tau - p_now_us;
            END IF;
          END LOOP;
          IF refused_index IS NOT NULL THEN
            PERFORM herald_refund_v1(v_limits, v_spent, p_now_us);
            verdict := 'refused';
            RETURN;
          END IF;

          IF p_window_us IS NOT NULL THEN
            v_window := GREATEST(1, p_window_us);
            PERFORM pg_advisory_xact_lock(hashtextextended('prefix_velocity:' || p_project || ':' || p_prefix, 0));
            SELECT v.window_start_us, v.count, v.baseline INTO v_start, v_sends, v_baseline
              FROM prefix_velocity v WHERE v.project_id = p_project AND v.prefix = p_prefix;
            IF NOT FOUND THEN
              v_start := p_now_us - p_now_us % v_window;
              v_sends := 0;
              v_baseline := 0;
            END IF;
            IF p_now_us >= v_start + v_window THEN
              v_elapsed := (p_now_us - v_start) / v_window;
              v_baseline := v_baseline + p_smoothing * (v_sends::double precision - v_baseline);
              IF v_elapsed > 1 THEN
                v_factor := 1.0;
                FOR v_index IN 1 .. LEAST(v_elapsed, 10000) - 1 LOOP
                  v_factor := v_factor * (1 - p_smoothing);
                END LOOP;
                v_baseline := v_baseline * v_factor;
              END IF;
              v_start := v_start + v_elapsed * v_window;
              v_sends := 0;
            END IF;
            v_sends := v_sends + 1;
            INSERT INTO prefix_velocity (project_id, prefix, window_start_us, count, baseline) VALUES (p_project, p_prefix, v_start, v_sends, v_baseline)
              ON CONFLICT (project_id, prefix) DO UPDATE SET
                window_start_us = excluded.window_start_us, count = excluded.count, baseline = excluded.baseline;
            IF v_sends::double precision > GREATEST(p_min_sends::double precision, p_multiple * v_baseline) THEN
              block_until := p_now_us + p_block_us;
              block_created := p_now_us;
              block_reason := format('%s sends in %s against a baseline of %s per window', v_sends, p_window_text, to_char(v_baseline, 'FM999999999990.0'));
              INSERT INTO prefix_blocks (project_id, prefix, until_us, reason, created_us) VALUES (p_project, p_prefix, block_until, block_reason, block_created)
                ON CONFLICT (project_id, prefix) DO UPDATE SET until_us = excluded.until_us, reason = excluded.reason, created_us = excluded.created_us;
              PERFORM herald_refund_v1(v_limits, v_spent, p_now_us);
              verdict := 'tripped';
              RETURN;
            END IF;
          END IF;

          INSERT INTO verification_sessions
            (id, project_id, phone_number, code_hash, created_at_ms, expires_at_ms, attempts, max_attempts, consumed_at_ms, job_id, region,
             session_info_sealed, client_key, credential_hash, purpose, code_sealed)
            VALUES (p_id, p_project, p_phone, p_code_hash, p_created_ms, p_expires_ms, 0, p_max_attempts, NULL, p_job_id, p_region,
             p_info_sealed, p_client_key, p_credential_hash, p_purpose, p_code_sealed);
          IF p_job_id IS NOT NULL THEN
            INSERT INTO deliveries (job_id, project_id, type, destination, status, attempts, created_at_ms, updated_at_ms)
              VALUES (p_job_id, p_project, 'sms', p_phone, 'pending', 0, p_created_ms, p_created_ms)
              ON CONFLICT (job_id) DO NOTHING;
          END IF;
          verdict := 'admitted';
        END
        $fn$
        """
}
