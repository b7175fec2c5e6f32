"""The calculator server: exact results, clear refusals, and real stdio and streamable-HTTP transports."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from tool_servers.calculator import CalcError, build_server, calculate, evaluate

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


EXACT_CASES = [
    # integers and the four operations
    ("2+3", "5"),
    ("7-10", "-3"),
    ("6*7", "42"),
    ("123456789 * 987654321", "121932631112635269"),
    ("2*(3+4)", "14"),
    ("((1+2)*(3+4))", "21"),
    ("10/4", "2.5"),
    ("8/2", "4"),
    # decimals stay exact
    ("0.1+0.2", "0.3"),
    ("1 - 0.9", "0.1"),
    ("0.1*3", "0.3"),
    ("1.5e-3", "0.0015"),
    ("1e3", "1000"),
    (".5 + 1.", "1.5"),
    ("0.000001", "0.000001"),
    ("-0.05", "-0.05"),
    # fractions
    ("1/3 + 1/6", "0.5"),
    ("1/3", "1/3 ≈ 0.3333333333"),
    ("2/3", "2/3 ≈ 0.6666666667"),
    ("-1/3", "-1/3 ≈ -0.3333333333"),
    ("1/7", "1/7 ≈ 0.1428571429"),
    ("10^20/3", "100000000000000000000/3 ≈ 3.333333333e+19"),
    ("1/2^40", "1/1099511627776 ≈ 9.094947018e-13"),
    ("(1/3)*3", "1"),
    # powers: both spellings, right-associative, unary minus binds looser than ^
    ("2^10", "1024"),
    ("2**10", "1024"),
    ("2^3^2", "512"),
    ("-2^2", "-4"),
    ("(-2)^2", "4"),
    ("2^-1", "0.5"),
    ("2**-2", "0.25"),
    ("(2/3)^2", "4/9 ≈ 0.4444444444"),
    ("0^0", "1"),
    ("(-1)^1000001", "-1"),
    ("4^(1/2)", "2"),
    ("27^(2/3)", "9"),
    ("(-8)^(1/3)", "-2"),
    ("2^100", "1267650600228229401496703205376"),
    ("--3", "3"),
    ("-(-3)", "3"),
    ("+4", "4"),
    # floor division and remainder follow floor semantics
    ("7//2", "3"),
    ("-7//2", "-4"),
    ("7 % 3", "1"),
    ("-7 % 3", "2"),
    ("7.5 % 2", "1.5"),
    # functions with exact results
    ("sqrt(16)", "4"),
    ("sqrt(16/9)", "4/3 ≈ 1.333333333"),
    ("sqrt(0.25)", "0.5"),
    ("abs(-3/4)", "0.75"),
    ("round(2.5)", "3"),
    ("round(-2.5)", "-3"),
    ("round(2.675, 2)", "2.68"),
    ("round(1234, -2)", "1200"),
    ("round(pi, 3)", "3.142"),
    ("floor(-3.5)", "-4"),
    ("ceil(3.2)", "4"),
    ("floor(7/2)", "3"),
    ("min(3, 1/2, 2)", "0.5"),
    ("max(1, 2, 3)", "3"),
    ("gcd(12, 18)", "6"),
    ("gcd(12, 18, 8)", "2"),
    ("lcm(4, 6, 10)", "60"),
    ("factorial(20)", "2432902008176640000"),
    ("5!", "120"),
    ("-3!", "-6"),
    ("2^3!", "64"),
    ("log10(1000)", "3"),
    ("log(8, 2)", "3"),
    ("log2(1/8)", "-3"),
    # unicode operators models copy from math text
    ("3 × 4 ÷ 2 − 1", "5"),
    ("  1 +\n 2  ", "3"),
]


@pytest.mark.parametrize(("expression", "expected"), EXACT_CASES)
def test_exact_results(expression: str, expected: str) -> None:
    assert calculate(expression) == expected


def test_decimals_are_fractions_not_floats() -> None:
    assert evaluate("0.1 + 0.2") == Fraction(3, 10)
    assert evaluate("1/3 + 1/6") == Fraction(1, 2)
    assert isinstance(evaluate("2^200"), Fraction)


FLOAT_CASES = [
    ("sqrt(2)", 2**0.5),
    ("2^0.5", 2**0.5),
    ("pi", 3.141592653589793),
    ("2*pi", 6.283185307179586),
    ("e", 2.718281828459045),
    ("exp(1)", 2.718281828459045),
    ("ln(e)", 1.0),
    ("log(100)", 4.605170185988092),
    ("sin(pi/2)", 1.0),
    ("cos(0)", 1.0),
    ("tan(pi/4)", 1.0),
    ("atan(1)*4", 3.141592653589793),
    ("degrees(pi)", 180.0),
    ("sin(radians(30))", 0.5),
    ("max(1, pi)", 3.141592653589793),
    ("(-8)^(1/3) + pi", -2 + 3.141592653589793),
]


@pytest.mark.parametrize(("expression", "expected"), FLOAT_CASES)
def test_float_results(expression: str, expected: float) -> None:
    value = evaluate(expression)
    assert isinstance(value, float)
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert calculate(expression).startswith("≈ ")


def test_float_formatting() -> None:
    assert calculate("sqrt(2)") == "≈ 1.414213562"
    assert calculate("pi") == "≈ 3.141592654"
    assert calculate("exp(30)") == "≈ 1.068647458e+13"


REFUSALS = [
    # code, not arithmetic
    ("__import__('os')", "unknown function '__import__'"),
    ("(1).__class__", "attribute access is not allowed"),
    ("1.real", "attribute access is not allowed"),
    ("os.system('ls')", "attribute access is not allowed"),
    ("open('/etc/passwd')", "unknown function 'open'"),
    ("eval('1')", "unknown function 'eval'"),
    ("lambda: 1", "unknown name 'lambda'"),
    ("x + 1", "unknown name 'x'"),
    ("Pi", "did you mean 'pi'?"),
    ("'abc'", "strings are not allowed"),
    ("[1, 2]", "brackets are not allowed"),
    ("{1}", "braces are not allowed"),
    ("x = 1", "unknown name 'x'"),
    ("1 = 1", "'=' is not allowed"),
    ("1; 2", "unexpected character ';'"),
    ("1 < 2", "unexpected character '<'"),
    # sizes
    ("9**9**9", "exceed the limit of 10000 bits"),
    ("2**100000", "exceed the limit of 10000 bits"),
    ("2^10000", "exceed the limit of 10000 bits"),
    ("(2^5000)*(2^5000)", "result too large"),
    ("factorial(1001)", "limited to arguments up to 1000"),
    ("1001!", "limited to arguments up to 1000"),
    ("1e99999", "literal exponents are limited"),
    ("1" * 1001, "expression too long: 1001 characters, the limit is 1000"),
    ("(" * 60 + "1" + ")" * 60, "nested too deeply"),
    ("sqrt(" * 60 + "1" + ")" * 60, "nested too deeply"),
    ("-" * 60 + "1", "nested too deeply"),
    ("exp(1000)", "too large for floating point"),
    ("pi^100000", "too large for floating point"),
    # division by zero, however spelled
    ("1/0", "division by zero"),
    ("1/(2-2)", "division by zero"),
    ("1 // 0", "division by zero"),
    ("5 % 0", "division by zero"),
    ("0^-1", "division by zero"),
    ("pi/0", "division by zero"),
    # syntax, with positions
    ("", "empty expression"),
    ("1 +", "syntax error: the expression ends where a number was expected (at position 4)"),
    ("(1+2", "syntax error: the '(' at position 1 is never closed"),
    ("1+2)", "syntax error: unmatched ')' (at position 4)"),
    ("1 2", "missing operator before '2'"),
    ("2pi", "missing operator before 'pi'"),
    ("2(3)", "missing operator before '('"),
    ("*3", "expected a number or '(' but found '*'"),
    ("15%", "'%' is the remainder operator"),
    ("sqrt 4", "function 'sqrt' needs parentheses"),
    # domains and arities
    ("sqrt(-1)", "sqrt() of a negative number has no real value"),
    ("(-2)^(1/2)", "no real value"),
    ("ln(0)", "ln() needs a positive number"),
    ("log(8, 1)", "base must be positive and not 1"),
    ("asin(2)", "math domain error"),
    ("factorial(-1)", "needs a non-negative whole number"),
    ("factorial(2.5)", "needs a non-negative whole number, got 2.5"),
    ("gcd(1.5, 2)", "gcd() needs whole numbers"),
    ("sqrt(1, 2)", "sqrt() takes 1 argument, got 2"),
    ("min()", "min() takes at least 1 argument, got 0"),
    ("round(1, 2, 3)", "round() takes 1 to 2 arguments, got 3"),
]


@pytest.mark.parametrize(("expression", "message"), REFUSALS)
def test_refusals(expression: str, message: str) -> None:
    with pytest.raises(CalcError) as caught:
        calculate(expression)
    assert message in str(caught.value)


def test_error_points_at_the_problem() -> None:
    with pytest.raises(CalcError) as caught:
        calculate("1 + 2 * (3 / 0)")
    assert str(caught.value) == "division by zero (at position 12)\n  1 + 2 * (3 / 0)\n             ^"


def test_limits_are_enforced_quickly() -> None:
    start = time.perf_counter()
    for expression in ("9**9**9", "2**100000", "10**10**10", "factorial(1000)", "(2^9999)*(2^9999)"):
        with contextlib.suppress(CalcError):
            calculate(expression)
    assert time.perf_counter() - start < 1.0


def text_of(result: CallToolResult) -> str:
    assert result.content and isinstance(result.content[0], TextContent)
    return result.content[0].text


@pytest.mark.anyio
async def test_in_memory_server_lists_and_calls_the_tool() -> None:
    async with Client(build_server()) as client:
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools] == ["calculate"]
        description = tools[0].description or ""
        for syntax in ("^ or **", "sqrt", "pi", "1/3 ≈ 0.3333333333"):
            assert syntax in description
        assert tools[0].input_schema["required"] == ["expression"]

        good = await client.call_tool("calculate", {"expression": "1/3 + 1/6"})
        assert not good.is_error
        assert text_of(good) == "0.5"

        bad = await client.call_tool("calculate", {"expression": "__import__('os')"})
        assert bad.is_error
        assert "unknown function '__import__'" in text_of(bad)


@pytest.mark.anyio
async def test_stdio_subprocess() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tool_servers.calculator"], cwd=str(REPO_ROOT)
    )
    async with Client(params) as client:
        good = await client.call_tool("calculate", {"expression": "0.1 + 0.2"})
        assert not good.is_error
        assert text_of(good) == "0.3"

        bad = await client.call_tool("calculate", {"expression": "9**9**9"})
        assert bad.is_error
        assert "exceed the limit of 10000 bits" in text_of(bad)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"server did not accept connections on port {port} within {timeout} s")


@pytest.mark.anyio
async def test_streamable_http_subprocess() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tool_servers.calculator", "--transport", "http", "--port", str(port)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            good = await client.call_tool("calculate", {"expression": "2^10 / 3"})
            assert not good.is_error
            assert text_of(good) == "1024/3 ≈ 341.3333333"

            bad = await client.call_tool("calculate", {"expression": "(1).__class__"})
            assert bad.is_error
            assert "attribute access is not allowed" in text_of(bad)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_server_does_not_import_mcp_rl() -> None:
    check = (
        "import sys, tool_servers.calculator; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'mcp_rl'], 'imports mcp_rl'"
    )
    subprocess.run([sys.executable, "-c", check], cwd=REPO_ROOT, check=True, timeout=60)
