"""The one parser for numbers as people type them (udfs/numbers.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from udfs import numbers
from udfs.errors import FlopsheetError

ACCEPTED = [
    ("12000", 12000), ("12,000", 12000), ("$12,000", 12000), ("US$12,000", 12000), (" $ 12,000 ", 12000),
    ("1,234,567.5", 1234567.5), ("0.7", 0.7), (".5", 0.5), ("5.", 5), ("7e9", 7e9), ("1.5E+12", 1.5e12),
    ("70%", 0.7), ("70 %", 0.7), ("12.5%", 0.125), ("100%", 1.0), ("-5%", -0.05),
    ("1.5k", 1500), ("1.5K", 1500), ("8B", 8e9), ("8bn", 8e9), ("8 BN", 8e9), ("2T", 2e12), ("2 t", 2e12),
    ("350M", 350e6), ("350m", 350e6), ("$1.2M", 1.2e6), ("$2k", 2000), ("1,500k", 1.5e6),
    ("-5", -5), ("+5", 5), ("-$5", -5), ("$-5", -5), ("\u22125", -5), ("(5)", -5), ("($5)", -5),
    ("( $1,200.50 )", -1200.5), ("(2k)", -2000), ("0", 0),
]

REFUSED = [
    "", " ", "$", "%", "k", "abc", "n/a", "7B parameters", "70% of peak", "12 000", "12,00", "1,5", "1,2345",
    "1000,000", ",000", "12,000,00", "1.2.3", "1e3k", "5%k", "5k%", "$70%", "--5", "-(5)", "(-5)", "(5",
    "5)", "- $ -5", "1_000", "0x10", "inf", "nan", "1e999", "5 x", "H100 SXM 80GB", "Llama 3 70B", "$ $5",
]


@pytest.mark.parametrize("text,expected", ACCEPTED)
def test_accepted(text, expected):
    assert numbers.try_parse(text) == pytest.approx(expected, rel=1e-15, abs=0)
    assert numbers.parse("x", text) == pytest.approx(expected, rel=1e-15, abs=0)


@pytest.mark.parametrize("text", REFUSED)
def test_refused(text):
    assert numbers.try_parse(text) is None
    with pytest.raises(FlopsheetError) as err:
        numbers.parse("hardware_cost_usd", text)
    # a number written too large for a float is #NUM! (issue 14: 400 digits, 1e999); other text #VALUE!
    assert err.value.code == ("#NUM!" if text == "1e999" else "#VALUE!")
    assert "hardware_cost_usd" in err.value.message


@pytest.mark.parametrize("text", ["€12,000", "£5", "12,000 €", "¥100"])
def test_other_currencies_are_refused_with_a_reason(text):
    with pytest.raises(FlopsheetError, match="US dollars"):
        numbers.parse("hardware_cost_usd", text)


def test_message_states_the_rule():
    with pytest.raises(FlopsheetError) as err:
        numbers.parse("utilization", "seventy")
    assert "70%" in str(err.value) and "$12,000" in str(err.value)


@given(st.integers(min_value=0, max_value=10**15))
def test_thousands_grouping_round_trips(n):
    assert numbers.try_parse(f"{n:,}") == n
    assert numbers.try_parse(f"${n:,}") == n
    assert numbers.try_parse(f"(${n:,})") == -n


@given(st.floats(min_value=-1e300, max_value=1e300, allow_nan=False))
def test_python_float_text_round_trips(x):
    assert numbers.try_parse(repr(x)) == x


# ---------------------------------------------------------------- used everywhere a number is accepted
def test_registry_accepts_finance_numbers():
    import udfs
    typed = udfs.call("COST_PER_1M_TOKENS", "$12,000", "70%", "100")
    assert typed == udfs.call("COST_PER_1M_TOKENS", 12000, 0.7, 100)
    assert udfs.call("TRAINING_FLOPS", "7B", "2T") == udfs.call("TRAINING_FLOPS", 7e9, 2e12)
    with pytest.raises(FlopsheetError, match="US dollars"):
        udfs.call("COST_PER_1M_TOKENS", "€12,000", 0.7, 100)


def test_cli_calc_accepts_finance_numbers(capsys):
    from udfs.cli import main
    assert main(["calc", "COST_PER_1M_TOKENS", "$12,000", "70%", "100"]) == 0
    typed = capsys.readouterr().out
    assert main(["calc", "COST_PER_1M_TOKENS", "12000", "0.7", "100"]) == 0
    assert typed == capsys.readouterr().out and float(typed) > 0


def test_scenario_files_accept_finance_numbers():
    from udfs.planning import scenario
    base = """name = "x"
[workload]
kind = "serve"
model = "Llama 3.1 8B"
requests_per_minute = {rpm}
output_tokens_per_request = 300
headroom = {headroom}
[constraints]
budget_usd = {budget}
"""
    typed = scenario.parse(base.format(rpm='"1.5k"', headroom='"20%"', budget='"$20,000"'))
    plain = scenario.parse(base.format(rpm="1500", headroom="0.2", budget="20000"))
    assert typed == plain
    with pytest.raises(scenario.ScenarioError, match=r"budget_usd.*12,00"):
        scenario.parse(base.format(rpm="1500", headroom="0.2", budget='"12,00"'))
