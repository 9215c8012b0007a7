"""The one 'did you mean' every unknown key, name and weight key gets: within two edits, or a name cut short."""

from base.errors import did_you_mean, edit_distance, near_misses


def test_edit_distance_counts_insertions_deletions_and_substitutions():
    assert [edit_distance(a, b) for a, b in [("kitten", "sitting"), ("", "abc"), ("paths", "pahts"), ("x", "x")]] == \
        [3, 3, 2, 0]


def test_a_name_is_a_near_miss_within_two_edits_or_as_the_start_of_a_longer_one():
    assert near_misses("qualty", ["quality", "qual", "dedup"]) == ["quality", "qual"]  # the closest first
    assert near_misses("zsh", ["zshdoc", "rmanual"]) == ["zshdoc"]  # cut short: 3 edits, yet its start
    assert near_misses("en", ["web", "de", "en"]) == []  # a short word: two edits from most short names
    assert near_misses("vi", ["vim"]) == ["vim"]  # one edit, fewer than its length


def test_did_you_mean_names_the_closest_choice_or_says_nothing():
    assert did_you_mean("removed_sampel", ["removed_sample"]) == " (did you mean 'removed_sample'?)"
    assert did_you_mean("colour", ["name", "paths"]) == ""
