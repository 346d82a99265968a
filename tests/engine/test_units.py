"""A memory's sentences embedded one by one, so a question finds the sentence that answers it."""
import pytest

from hermes_cmms.common.units import MAX_UNITS, units
from hermes_cmms.recall.search import _vector_search
from hermes_cmms.vectors.chroma import UNITS, owner
from hermes_cmms.vectors.indexer import query_vector


@pytest.mark.quick
def test_each_sentence_keeps_the_speaker():
    assert units("Melanie: Hey Caroline! I went camping last weekend. It was great to unplug.") == [
        "Melanie: Hey Caroline!", "Melanie: I went camping last weekend.", "Melanie: It was great to unplug."]


def test_one_sentence_is_the_memory_itself_and_fillers_do_not_count():
    assert units("The boat is moored at pier seven.") == []
    assert units("Caroline: Ok. Sounds good to me!") == []  # "Ok." says nothing to search for


def test_a_long_memory_is_grouped_into_a_bounded_number_of_runs():
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    runs = units(text)
    assert len(runs) <= MAX_UNITS and " ".join(runs) == text  # every sentence, in order, once


def test_a_question_reaches_the_one_sentence_that_answers_it(service):
    scope = "local:units"
    mixed = service.remember(scope, "Work was busy and the printer broke again. My sister's wedding "
                                    "is in Lisbon next June. Anyway, the weather has been grey.")
    for other in ("The printer in the office jams every week.", "The weather in Lisbon is sunny today.",
                  "I need to buy new shoes for work."):
        service.remember(scope, other)
    assert service.upkeep.drain(60)
    assert service.indexer.vectors.present(scope, [mixed], UNITS) == {mixed}
    question = query_vector(service.indexer, "When is my sister getting married?")
    unit, _ = service.indexer.vectors.query(scope, question, 1, UNITS)[0]
    assert owner(unit) == mixed and unit != f"{mixed}:0"  # its own sentence, not its opening
    found, meaning = _vector_search(service.engine, scope, "When is my sister getting married?")
    assert found["vector_sentences"][0] == mixed and meaning[mixed][1][0] == int(unit.rpartition(":")[2])


def test_only_sentence_ids_are_read_as_their_memory(service):
    """An id with a colon (an imported one, say) in the content view is that memory's own."""
    scope = "local:units-ids"
    vector = query_vector(service.indexer, "a boat at the pier")
    service.indexer.vectors.upsert(scope, ["import:7"], [vector], [{"kind": "note", "created_at": 0.0}])
    assert service.indexer.vectors.present(scope, ["import:7"], "content") == {"import:7"}
    service.indexer.vectors.upsert(scope, ["import:7:0"], [vector], [{"memory_id": "import:7", "kind": "note",
                                                                        "created_at": 0.0}], view=UNITS)
    assert service.indexer.vectors.present(scope, ["import:7"], UNITS) == {"import:7"}
