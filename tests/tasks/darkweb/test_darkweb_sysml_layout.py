"""SYSML's released layout ({split}.csv + episodes/len_{L}.json + matches.csv), on a hand-written fixture."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from core.errors import DataError, HarnessError
from tasks.darkweb import DarkwebTask
from tasks.darkweb.sysml_layout import is_sysml_layout, read_matches

COLUMNS = ["cleaned_post", "Date", "subforum", "market", "author", "thread_id"]
# market -> split -> rows (cleaned_post, Date, subforum, author, thread)
ROWS = {
    "bmr": {
        "train": [
            ("hi all [LINK]", "2013-05-06 10:00:00", "Drugs", "vendorA", "t1"),  # Monday
            ("stealth is good", "2013-05-07 11:00:00", "Drugs", "vendorA", "t1"),
            ("[QUOTE] no", "2013-05-08", "Offtopic", "buyerB", "t2"),
            ("pm me", "2013-05-09 09:30:00", "Drugs", "buyerB", "t1"),
            ("", "2013-05-10 12:00:00", "Offtopic", "vendorA", "t2"),  # an empty post (NaN in pandas)
        ],
        "test": [
            ("restock soon", "2013-09-01 08:00:00", "Drugs", "vendorA", "t3"),  # Sunday
            ("new prices", "2013-09-02 08:00:00", "Drugs", "vendorA", "t3"),
            ("scam!", "2013-09-03 08:00:00", "Drugs", "buyerB", "t3"),
            ("really", "2013-09-04 08:00:00", "Drugs", "buyerB", "t3"),
            ("back again", "2013-09-05 08:00:00", "Drugs", "vendorA", "t4"),  # vendorA's 2nd episode: t4 only
            ("order placed", "2013-09-06 08:00:00", "Drugs", "vendorA", "t4"),
        ],
    },
    "agora": {
        "train": [
            ("hello agora", "2014-01-01T10:00:00", "Market", "A_vendor", "a1"),
            ("same stealth", "2014-01-02T10:00:00", "Market", "A_vendor", "a1"),
            ("noob here", "2014-01-03T10:00:00", "Newbies", "newbie", "a2"),
            ("thanks", "2014-01-04T10:00:00", "Newbies", "newbie", "a2"),
        ],
        "test": [
            ("restock agora", "2014-06-01T10:00:00", "Market", "A_vendor", "a3"),
            ("prices agora", "2014-06-02T10:00:00", "Market", "A_vendor", "a3"),
            ("hi", "2014-06-03T10:00:00", "Newbies", "newbie", "a4"),
            ("bye", "2014-06-04T10:00:00", "Newbies", "newbie", "a4"),
        ],
    },
}
# episodes of length 2 as row numbers; -1 pads a short episode (SYSML's convention)
EPISODES = {
    "bmr": {
        "train": {"vendorA": [[0, 1], [4, -1]], "buyerB": [[2, 3]]},
        "test": {"vendorA": [[0, 1], [4, 5]], "buyerB": [[2, 3]]},
    },
    "agora": {
        "train": {"A_vendor": [[0, 1]], "newbie": [[2, 3]]},
        "test": {"A_vendor": [[0, 1]], "newbie": [[2, 3]]},
    },
}


def write_layout(root: Path) -> Path:
    for market, splits in ROWS.items():
        folder = root / market
        (folder / "episodes").mkdir(parents=True)
        for split, rows in splits.items():
            with (folder / f"{split}.csv").open("w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(COLUMNS)
                for text, date, forum, author, thread in rows:
                    writer.writerow([text, date, forum, market, author, thread])
        payload = {split: EPISODES[market][split] for split in ("train", "test")}
        (folder / "episodes" / "len_3.json").write_text(json.dumps(payload), encoding="utf-8")
    with (root / "matches.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["uid1", "market1", "uid2", "market2", "match"])
        writer.writerow(["vendorA", "bmr", "A_vendor", "agora", "True"])
        writer.writerow(["buyerB", "bmr", "newbie", "agora", "False"])
    return root


def test_reads_episodes_weekdays_and_matched_persons(tmp_path: Path):
    root = write_layout(tmp_path)
    assert is_sysml_layout(root) and is_sysml_layout(root / "bmr") and not is_sysml_layout(tmp_path / "bmr/episodes")
    task = DarkwebTask(episode_length=3)
    train = task.load(root, "train")
    assert train.markets == ("agora", "bmr")
    by_id = {e.id: e for e in train.episodes}
    first = by_id["bmr/train/vendorA/0"]
    assert [p.text for p in first.posts] == ["hi all [LINK]", "stealth is good"]
    assert [p.weekday for p in first.posts] == [0, 1] and first.posts[0].subforum == "Drugs"
    assert [p.text for p in by_id["bmr/train/vendorA/1"].posts] == [""]  # the -1 pad dropped, the empty post kept
    # vendorA on bmr and A_vendor on agora are one person; unmatched accounts are persons of their own
    assert first.person == by_id["agora/train/A_vendor/0"].person
    assert by_id["bmr/train/buyerB/0"].person != by_id["agora/train/newbie/0"].person
    assert by_id["agora/train/newbie/0"].person == "agora:newbie"
    # the graph posts come from the optional author and thread columns; a thread's first post starts it
    kinds = {(p.market, p.author, p.thread_id, p.kind) for p in train.posts}
    assert ("bmr", "vendorA", "t1", "submission") in kinds and ("bmr", "buyerB", "t1", "comment") in kinds
    assert train.checksum.startswith("sha256:") and train.checksum != task.load(root, "test").checksum


def test_one_market_folder_and_market_selection(tmp_path: Path):
    root = write_layout(tmp_path)
    alone = DarkwebTask(episode_length=3).load(root / "agora", "test")
    assert alone.markets == ("agora",) and len(alone.episodes) == 2
    chosen = DarkwebTask(episode_length=3, market="bmr").load(root, "test")
    assert {e.market for e in chosen.episodes} == {"bmr"} and len(chosen.episodes) == 3
    with pytest.raises(HarnessError, match="not in"):
        DarkwebTask(episode_length=3, market="silkroad").load(root, "test")
    # max_authors counts persons (a matched pair is one) and keeps their graph posts
    small = DarkwebTask(episode_length=3, max_authors=2).load(root, "train")
    kept = {(e.market, e.author) for e in small.episodes}
    assert len({e.person for e in small.episodes}) == 2
    assert small.posts and {(p.market, p.author) for p in small.posts} <= kept


def test_migrant_linking_uses_the_matched_persons(tmp_path: Path):
    root = write_layout(tmp_path)
    task = DarkwebTask(episode_length=3)
    test = task.load(root, "test")

    class ByPerson:  # embeds an episode by its person: a perfect linker
        def embed(self, episodes):
            names = sorted({e.person for e in episodes})
            return np.eye(len(names))[[names.index(e.person) for e in episodes]]

    # the thread_id column gives the episode posts their threads (the default protocol needs them)
    threads = [[p.thread_id for p in e.posts] for e in test.episodes if e.author == "vendorA"]
    assert threads == [["t3", "t3"], ["t4", "t4"]]
    scores = task.evaluate(ByPerson(), test).scores
    assert scores["mrr"] == 1.0 and scores["same_thread_candidates_removed"] == 0
    assert scores["migrant/agora->bmr/mrr"] == 1.0 and scores["migrant/agora->bmr/persons"] == 1.0
    assert scores["migrant/queries"] == 1.0 + 2.0  # A_vendor's one agora episode; vendorA's two bmr episodes


def test_a_layout_without_threads_is_refused_before_any_fit(tmp_path: Path):
    """Audit 9, F6: without a thread_id column the default protocol refused only after the fit, and left a
    checkpoint that the suggested rerun (another task-parameter folder) never used."""
    from harness.runner import run

    root = write_layout(tmp_path / "data")
    for market, splits in ROWS.items():
        for split in splits:
            path = root / market / f"{split}.csv"
            rows = list(csv.reader(path.open(encoding="utf-8", newline="")))
            with path.open("w", encoding="utf-8", newline="") as handle:
                csv.writer(handle).writerows(row[:-1] for row in rows)  # thread_id is the last column
    out = tmp_path / "runs"
    with pytest.raises(HarnessError, match="no thread ids .*protocol=legacy"):
        run(system_name="episode_tfidf", task_name="darkweb", data=root, out_dir=out, task_params={"episode_length": 3})
    assert not [path for path in out.rglob("*") if path.is_file() and not path.name.endswith(".lock")]


def test_posts_without_a_thread_are_warned_of_once(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    """Was logged twice a run (audit 9's note): once before the fit (`check_splits`) and again when scoring."""
    import logging

    from harness.runner import run

    root = write_layout(tmp_path / "data")
    path = root / "bmr" / "test.csv"
    rows = list(csv.reader(path.open(encoding="utf-8", newline="")))
    rows[1][-1] = ""  # the first test post of bmr loses its thread
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    with caplog.at_level(logging.WARNING, logger="harness"):
        run(system_name="episode_tfidf", task_name="darkweb", data=root, out_dir=tmp_path / "runs",
            task_params={"episode_length": 3})  # fmt: skip
    warnings = [record.getMessage() for record in caplog.records if "have no thread id" in record.getMessage()]
    assert warnings == ["1 of 10 posts have no thread id: they share no thread with any query"]


def test_bad_layout_files_are_named(tmp_path: Path):
    root = write_layout(tmp_path)
    with pytest.raises(DataError, match="len_5.json"):
        DarkwebTask(episode_length=5).load(root, "train")
    (root / "bmr" / "episodes" / "len_3.json").write_text(json.dumps({"train": {"x": [[99]]}, "test": {}}))
    with pytest.raises(DataError, match="row 99 is not one of the csv's 5"):
        DarkwebTask(episode_length=3).load(root, "train")
    (root / "agora" / "train.csv").write_text("cleaned_post,Date\nhi,2014-01-01\n", encoding="utf-8")
    with pytest.raises(DataError, match="missing column"):
        DarkwebTask(episode_length=3).load(root, "train")
    bad = tmp_path / "m.csv"
    bad.write_text("uid1,market1,uid2,market2,match\na,x,b,y,maybe\n", encoding="utf-8")
    with pytest.raises(DataError, match="boolean"):
        read_matches(bad)


def test_layouts_that_were_scored_wrongly_are_refused(tmp_path: Path):
    """Audit 9, F1-F3: each of these ran and changed the scores without a word (a row number -2 dropped, where
    SYSML's `df.iloc` reads a row from the end; a backup copy of a market scored as a second market of one name, so
    every query met its clone; a market name that differs between a folder's train.csv and test.csv, or that
    matches.csv misspells, made the migrant rows vanish)."""
    task = DarkwebTask(episode_length=3)
    root = write_layout(tmp_path / "negative")
    episodes = root / "bmr" / "episodes" / "len_3.json"
    payload = json.loads(episodes.read_text(encoding="utf-8"))
    payload["train"]["vendorA"][1] = [4, -2]
    episodes.write_text(json.dumps(payload), encoding="utf-8")
    with pytest.raises(DataError, match="row -2 is not one of the csv's 5") as caught:
        task.load(root, "train")
    assert caught.value.path == str(episodes) and caught.value.field == "train"

    root = write_layout(tmp_path / "copied")
    shutil.copytree(root / "bmr", root / "bmr_backup")
    with pytest.raises(DataError, match="market 'bmr' is also the market of .*bmr; one folder a market"):
        task.load(root, "train")

    root = write_layout(tmp_path / "renamed")
    test_csv = root / "agora" / "test.csv"
    test_csv.write_text(test_csv.read_text(encoding="utf-8").replace(",agora,", ",agora2,"), encoding="utf-8")
    with pytest.raises(DataError, match="market 'agora2' differs from 'agora'") as caught:
        task.load(root, "train")
    assert caught.value.path == str(test_csv)

    root = write_layout(tmp_path / "misspelt")
    matches = root / "matches.csv"
    matches.write_text(matches.read_text(encoding="utf-8").replace(",bmr,", ",BMR,"), encoding="utf-8")
    with pytest.raises(DataError, match="names market.s. 'BMR', which no market's csv has") as caught:
        task.load(root, "train")
    assert caught.value.path == str(matches)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"a,bmr", "2 field.s. where the header has 5"),  # was an AttributeError traceback
        (b"a,bmr,b,agora,1,extra", "6 field.s. where the header has 5"),  # was accepted
        (b"a\xff,bmr,b,agora,1", "not valid UTF-8"),  # was a UnicodeDecodeError traceback
    ],
)
def test_a_bad_matches_line_is_named(tmp_path: Path, line: bytes, message: str):
    """Audit 9, F4: matches.csv was read without the checks train.csv and test.csv get."""
    matches = write_layout(tmp_path) / "matches.csv"
    matches.write_bytes(matches.read_bytes() + line + b"\n")
    with pytest.raises(DataError, match=message) as caught:
        read_matches(matches)
    assert caught.value.line == 4 and caught.value.path == str(matches)


def test_a_matches_file_with_a_byte_order_mark_and_a_header_naming_a_column_twice(tmp_path: Path):
    """Audit 9, F4 and F5: matches.csv with a BOM (as Excel writes) was "missing column(s) uid1"; a header naming a
    column twice read another column's values under that name ("market 'vendorA' differs ...")."""
    root = write_layout(tmp_path)
    matches = root / "matches.csv"
    plain = read_matches(matches)
    matches.write_bytes(b"\xef\xbb\xbf" + matches.read_bytes())
    assert read_matches(matches) == plain
    train = root / "bmr" / "train.csv"
    train.write_text(train.read_text(encoding="utf-8").replace(",author,", ",market,", 1), encoding="utf-8")
    with pytest.raises(DataError, match="column.s. named twice in the header: market") as caught:
        DarkwebTask(episode_length=3).load(root, "train")
    assert caught.value.line == 1 and caught.value.path == str(train)


def test_a_byte_order_mark_is_read_past_and_bad_bytes_are_named_by_line(tmp_path: Path):
    """Excel writes a BOM before the header (its first column went missing); a Latin-1 byte was a traceback."""
    root = write_layout(tmp_path)
    train = root / "bmr" / "train.csv"
    plain = DarkwebTask(episode_length=3).load(root, "train")
    train.write_bytes(b"\xef\xbb\xbf" + train.read_bytes())
    with_bom = DarkwebTask(episode_length=3).load(root, "train")
    assert with_bom.episodes == plain.episodes and with_bom.checksum != plain.checksum  # the bytes differ
    lines = train.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b"no", b"n\xe9")
    train.write_bytes(b"\n".join(lines))
    with pytest.raises(DataError, match="not valid UTF-8") as caught:
        DarkwebTask(episode_length=3).load(root, "train")
    assert caught.value.line == 4 and caught.value.path == str(train)


def test_a_short_row_is_named_by_its_line_counting_posts_that_span_lines(tmp_path: Path):
    """A row with one field was reported as "market 'bmr' differs from the first row's None", by its record number."""
    root = write_layout(tmp_path)
    train = root / "bmr" / "train.csv"
    lines = train.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace("hi all [LINK]", '"hi all\n[LINK]\nbye"')  # one post on three lines
    train.write_text("\n".join([*lines[:3], "only one field", *lines[3:]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="1 field.s. where the header has 6") as caught:
        DarkwebTask(episode_length=3).load(root, "train")
    assert caught.value.line == 6 and caught.value.path == str(train)  # header, a post on lines 2-4, one on 5


def test_a_folder_with_both_the_layout_and_a_posts_file_is_refused(tmp_path: Path):
    """The CSVs were read and posts.jsonl ignored, unsaid; giving the posts file itself reads it."""
    root = write_layout(tmp_path)
    (root / "posts.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(DataError, match="both SYSML's layout .a train.csv. and posts.jsonl; give --data") as caught:
        DarkwebTask(episode_length=3).load(root, "train")
    assert caught.value.path == str(root)
