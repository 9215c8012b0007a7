"""The stages of curation, in order, in one place. Quality scoring ends the per-document steps of `prepare`, so
that selection by score and then dedup see every score; global MinHash dedup follows exact dedup. A new stage is
one module here and one line below; a global stage that removes documents (`removes = True`) is skipped past by
every later stage and shows up in the funnel with no other change. Decontamination comes right after `prepare`
(and only with a [decontaminate] table), so that every copy of a leaked text is reported as contaminated. Topic
domains (only with a [domains] table) are fitted and assigned after dedup, on the documents that will be kept.
Annotator buckets (only with an [[annotate]] table that sets `buckets`) are cut where quality buckets are, at the
quantiles of the documents still in after decontamination and quality selection."""

from curation.stages.annotate_buckets import ANNOTATE_BUCKETS
from curation.stages.decontaminate import DECONTAMINATE
from curation.stages.domains import DOMAINS
from curation.stages.exact_dedup import EXACT_DEDUP
from curation.stages.minhash import MINHASH
from curation.stages.minhash_dedup import MINHASH_DEDUP
from curation.stages.prepare import PREPARE
from curation.stages.quality_select import QUALITY_SELECT
from curation.stages.tokenize import TOKENIZE

STAGES = (PREPARE, DECONTAMINATE, QUALITY_SELECT, ANNOTATE_BUCKETS, EXACT_DEDUP, MINHASH, MINHASH_DEDUP, DOMAINS, TOKENIZE)
