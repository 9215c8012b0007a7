from itertools import islice


class QualityScore:
    """`quality` = the classifier's P(positive). Selection by score needs every score, so it is a later stage."""

    name = "quality"
    batch_size = 256

    def __init__(self, model_path: str):
        from curation.quality import QualityModel

        self.model = QualityModel(model_path)

    def run(self, docs, funnel):
        while batch := list(islice(docs, self.batch_size)):
            for doc, score in zip(batch, self.model.scores([d.text for d in batch])):
                doc.quality = float(score)
            yield from batch
