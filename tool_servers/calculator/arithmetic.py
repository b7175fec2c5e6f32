"""Exact arithmetic for the calculator tool: a tokenizer, a recursive-descent parser and an evaluator.

The expression is parsed by hand and never reaches ``eval``, ``exec`` or ``compile``: the only things it can
name are the numbers, operators, functions and constants listed here, so a model cannot reach Python objects
through it. Every way to make the work explode (huge powers, factorials, literals, nesting) has a cap, so a
call finishes in milliseconds whatever the model sends.

Numbers are ``Fraction`` while they can stay exact (0.1 + 0.2 is exactly 3/10) and become ``float`` only where
the answer is irrational anyway: pi, e, and the transcendental functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction

Value = Fraction | float

MAX_EXPRESSION_CHARS = 1000
# Parentheses, unary signs and powers each add a level; real arithmetic stays far below this, and the cap
# keeps the recursive parser well away from Python's recursion limit.
MAX_DEPTH = 50
# About 3010 decimal digits: more than any worked answer needs, and it keeps every exact operation cheap
# (and under the 4300-digit limit CPython puts on int-to-str conversion).
MAX_RESULT_BITS = 10_000
MAX_FACTORIAL = 1000
MAX_ROUND_DIGITS = 1000
# A literal like 1e99999 would otherwise build a 330,000-bit integer before any limit could look at it.
MAX_LITERAL_EXPONENT = 3000
# Roots with a larger degree fall back to floating point; the exact search would cost more than it finds.
MAX_EXACT_ROOT_DEGREE = 64
APPROX_DIGITS = 10
# 1/2**40 is an exact decimal, but 40 digits after the point read worse than "1/1099511627776 ≈ 9.09e-13".
MAX_DECIMAL_PLACES = 30
# Shown around the error position when an expression is long, so the message stays readable.
SNIPPET_RADIUS = 30

RESULT_DIGITS = round(MAX_RESULT_BITS * math.log10(2))


class CalcError(Exception):
    """An expression the calculator refuses, with the (0-based) position the problem was found at."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.expression: str | None = None

    def __str__(self) -> str:
        if self.position is None or self.expression is None:
            return self.message
        return f"{self.message} (at position {self.position + 1})\n{_pointer(self.expression, self.position)}"


def _pointer(expression: str, position: int) -> str:
    """The expression (or a window of it) with a caret under ``position``."""
    start = max(0, position - SNIPPET_RADIUS)
    end = min(len(expression), position + SNIPPET_RADIUS)
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < len(expression) else ""
    # Tabs and newlines would knock the caret out of line with the character it points at.
    window = re.sub(r"\s", " ", expression[start:end])
    return f"  {prefix}{window}{suffix}\n  {' ' * (len(prefix) + position - start)}^"


# ---------------------------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class Token:
    kind: str  # "number", "name", "op", "bad" (a character that cannot start any token) or "end"
    text: str
    position: int


_NUMBER = re.compile(
    # "1." is a number but "1.real" is not: a dot followed by a letter is left for the parser to refuse
    # as attribute access.
    r"(?:\d+(?:\.(?![A-Za-z_])\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = ("**", "//", "+", "-", "*", "/", "%", "^", "(", ")", ",", "!", ".")
# Models copy these from math text; accepting them costs nothing and saves a failed call.
_ALIASES = {"×": "*", "·": "*", "÷": "/", "−": "-"}
_BAD_CHARACTERS = {
    "'": "strings are not allowed",
    '"': "strings are not allowed",
    "=": "'=' is not allowed: there are no variables or comparisons, write just the expression",
    "[": "brackets are not allowed, use parentheses",
    "]": "brackets are not allowed, use parentheses",
    "{": "braces are not allowed, use parentheses",
    "}": "braces are not allowed, use parentheses",
}


def tokenize(expression: str) -> list[Token]:
    """Split ``expression`` into tokens; characters that fit nowhere become "bad" tokens for the parser.

    Bad characters are reported where the parser meets them rather than here, so that the first problem
    in reading order is the one reported: ``__import__('os')`` fails on the unknown function, not the quote.
    """
    tokens: list[Token] = []
    i = 0
    while i < len(expression):
        ch = expression[i]
        if ch.isspace():
            i += 1
            continue
        if number := _NUMBER.match(expression, i):
            tokens.append(Token("number", number.group(), i))
            i = number.end()
            continue
        if name := _NAME.match(expression, i):
            tokens.append(Token("name", name.group(), i))
            i = name.end()
            continue
        if ch in _ALIASES:
            tokens.append(Token("op", _ALIASES[ch], i))
            i += 1
            continue
        operator = next((op for op in _OPERATORS if expression.startswith(op, i)), None)
        if operator is not None:
            # "**" and "^" are the same operator; one spelling keeps the parser simple.
            tokens.append(Token("op", "^" if operator == "**" else operator, i))
            i += len(operator)
            continue
        tokens.append(Token("bad", _BAD_CHARACTERS.get(ch, f"unexpected character {ch!r}"), i))
        i += 1
    tokens.append(Token("end", "", len(expression)))
    return tokens


# ------------------------------------------------------------------------------------------------ tree


@dataclass(frozen=True)
class Number:
    value: Fraction
    position: int


@dataclass(frozen=True)
class Constant:
    name: str
    position: int


@dataclass(frozen=True)
class Negate:
    operand: Node
    position: int


@dataclass(frozen=True)
class Chain:
    """A run of left-associative operators at one precedence level, e.g. ``a - b + c``.

    Kept flat rather than as nested binary nodes so that ``1+1+...+1`` evaluates in a loop instead of a
    recursion as deep as the expression is long.
    """

    first: Node
    rest: list[tuple[str, int, Node]] = field(default_factory=list)  # (operator, position, operand)


@dataclass(frozen=True)
class Power:
    base: Node
    exponent: Node
    position: int


@dataclass(frozen=True)
class Call:
    name: str
    args: list[Node]
    position: int


Node = Number | Constant | Negate | Chain | Power | Call


# ----------------------------------------------------------------------------------------------- parser


class _Parser:
    """Recursive descent over the grammar below (lowest precedence first)::

    expression := term (("+" | "-") term)*
    term       := unary (("*" | "/" | "//" | "%") unary)*
    unary      := ("-" | "+") unary | power          # so -2^2 is -(2^2), as in math
    power      := postfix ("^" unary)?               # right-associative: 2^3^2 is 2^9
    postfix    := atom "!"*
    atom       := number | constant | function "(" [expression ("," expression)*] ")" | "(" expression ")"
    """

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.peek()
        self.index += 1
        return token

    def at(self, *operators: str) -> bool:
        token = self.peek()
        return token.kind == "op" and token.text in operators

    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise CalcError("empty expression: write an arithmetic expression such as 2*(3+4)")
        node = self.expression(0)
        if self.peek().kind != "end":
            if self.at(")"):
                raise CalcError("syntax error: unmatched ')'", self.peek().position)
            raise self.unexpected_after_operand()
        return node

    def check_depth(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise CalcError(
                f"expression nested too deeply: the limit is {MAX_DEPTH} levels of parentheses, "
                "signs and powers",
                self.peek().position,
            )

    def expression(self, depth: int) -> Node:
        self.check_depth(depth)
        chain = Chain(self.term(depth))
        while self.at("+", "-"):
            operator = self.advance()
            chain.rest.append((operator.text, operator.position, self.term(depth)))
        return chain if chain.rest else chain.first

    def term(self, depth: int) -> Node:
        chain = Chain(self.unary(depth))
        while self.at("*", "/", "//", "%"):
            operator = self.advance()
            if operator.text == "%" and (self.peek().kind == "end" or self.at(")", ",")):
                # "15%" is the likeliest way to get here; say what % means instead of "unexpected end".
                raise CalcError(
                    "syntax error: '%' is the remainder operator (a % b); for a percentage write x/100",
                    operator.position,
                )
            chain.rest.append((operator.text, operator.position, self.unary(depth)))
        return chain if chain.rest else chain.first

    def unary(self, depth: int) -> Node:
        self.check_depth(depth)
        if self.at("-", "+"):
            sign = self.advance()
            operand = self.unary(depth + 1)
            return Negate(operand, sign.position) if sign.text == "-" else operand
        return self.power(depth)

    def power(self, depth: int) -> Node:
        base = self.postfix(depth)
        if self.at("^"):
            operator = self.advance()
            return Power(base, self.unary(depth + 1), operator.position)
        return base

    def postfix(self, depth: int) -> Node:
        node = self.atom(depth)
        while self.at("!"):
            node = Call("factorial", [node], self.advance().position)
        return node

    def atom(self, depth: int) -> Node:
        token = self.peek()
        if token.kind == "number":
            self.advance()
            return Number(_parse_number(token), token.position)
        if token.kind == "name":
            return self.name(depth)
        if self.at("("):
            opening = self.advance()
            inner = self.expression(depth + 1)
            self.close(opening)
            return inner
        if token.kind == "bad":
            raise CalcError(token.text, token.position)
        if token.kind == "end":
            raise CalcError("syntax error: the expression ends where a number was expected", token.position)
        raise CalcError(f"syntax error: expected a number or '(' but found {token.text!r}", token.position)

    def name(self, depth: int) -> Node:
        token = self.advance()
        if self.at("."):
            raise CalcError("attribute access is not allowed", self.peek().position)
        if self.at("("):
            if token.text not in FUNCTIONS:
                raise CalcError(
                    f"unknown function {token.text!r}{_did_you_mean(token.text, FUNCTIONS)}; "
                    f"available functions: {', '.join(sorted(FUNCTIONS))}",
                    token.position,
                )
            return self.call(token, depth)
        if token.text in CONSTANTS:
            return Constant(token.text, token.position)
        if token.text in FUNCTIONS:
            raise CalcError(
                f"function {token.text!r} needs parentheses, e.g. {token.text}(x)", self.peek().position
            )
        raise CalcError(
            f"unknown name {token.text!r}{_did_you_mean(token.text, CONSTANTS)}; there are no variables, "
            f"the only constants are {', '.join(sorted(CONSTANTS))}",
            token.position,
        )

    def call(self, name: Token, depth: int) -> Node:
        opening = self.advance()
        args: list[Node] = []
        if not self.at(")"):
            args.append(self.expression(depth + 1))
            while self.at(","):
                self.advance()
                args.append(self.expression(depth + 1))
        self.close(opening)
        spec = FUNCTIONS[name.text]
        if not spec.min_args <= len(args) <= spec.max_args:
            raise CalcError(f"{name.text}() takes {spec.arity_text()}, got {len(args)}", name.position)
        return Call(name.text, args, name.position)

    def close(self, opening: Token) -> None:
        if self.at(")"):
            self.advance()
            return
        if self.peek().kind == "end":
            raise CalcError(
                f"syntax error: the '(' at position {opening.position + 1} is never closed",
                self.peek().position,
            )
        raise self.unexpected_after_operand()

    def unexpected_after_operand(self) -> CalcError:
        """The error for a token that follows a complete operand but continues nothing."""
        token = self.peek()
        if token.kind == "bad":
            return CalcError(token.text, token.position)
        if token.kind == "op" and token.text == ".":
            return CalcError("attribute access is not allowed", token.position)
        if token.kind in ("number", "name") or (token.kind == "op" and token.text == "("):
            return CalcError(
                f"syntax error: missing operator before {token.text!r}; write multiplication explicitly, "
                "e.g. 2*pi or 2*(3+4)",
                token.position,
            )
        return CalcError(f"syntax error: unexpected {token.text!r}", token.position)


def _did_you_mean(name: str, known: Container[str]) -> str:
    return f" (did you mean {name.lower()!r}?)" if name.lower() != name and name.lower() in known else ""


def _parse_number(token: Token) -> Fraction:
    mantissa, _, exponent = token.text.lower().partition("e")
    if exponent and abs(int(exponent)) > MAX_LITERAL_EXPONENT:
        raise CalcError(
            f"number {token.text!r} is too large: literal exponents are limited to ±{MAX_LITERAL_EXPONENT}",
            token.position,
        )
    # Fraction reads decimal strings exactly, which is the point: "0.1" is 1/10, not the nearest double.
    return _checked(Fraction(mantissa) * Fraction(10) ** int(exponent or 0), token.position)


# -------------------------------------------------------------------------------------------- evaluation


def _checked(value: Value | int, position: int | None = None) -> Value:
    """``value`` as a ``Fraction`` or finite ``float``, refused if it is past the size limits."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CalcError("result too large for floating point (overflow)", position)
        return value
    value = Fraction(value)
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_RESULT_BITS:
        raise CalcError(
            f"result too large: exact numbers are limited to {MAX_RESULT_BITS} bits "
            f"(about {RESULT_DIGITS} digits)",
            position,
        )
    return value


def _evaluate(node: Node) -> Value:
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Constant):
        return CONSTANTS[node.name]
    if isinstance(node, Negate):
        return -_evaluate(node.operand)
    if isinstance(node, Chain):
        result = _evaluate(node.first)
        for operator, position, operand in node.rest:
            result = _binary(operator, result, _evaluate(operand), position)
        return result
    if isinstance(node, Power):
        return _power(_evaluate(node.base), _evaluate(node.exponent), node.position)
    args = [_evaluate(arg) for arg in node.args]
    try:
        return _checked(FUNCTIONS[node.name].apply(args), node.position)
    except CalcError as err:
        if err.position is None:
            err.position = node.position
        raise
    except ZeroDivisionError:
        raise CalcError("division by zero", node.position) from None
    except OverflowError:
        raise CalcError(f"{node.name}(): number too large for floating point", node.position) from None
    except ValueError:
        message = f"{node.name}() is undefined for these arguments (math domain error)"
        raise CalcError(message, node.position) from None


def _binary(operator: str, left: Value, right: Value, position: int) -> Value:
    try:
        if operator == "+":
            result = left + right
        elif operator == "-":
            result = left - right
        elif operator == "*":
            result = left * right
        elif operator == "/":
            result = left / right
        elif operator == "//":
            result = left // right
        else:
            result = left % right
    except ZeroDivisionError:
        raise CalcError("division by zero", position) from None
    except OverflowError:
        # Mixing a float with an exact number too big to be one.
        raise CalcError("number too large for floating point", position) from None
    return _checked(result, position)


def _power(base: Value, exponent: Value, position: int | None = None) -> Value:
    """``base ** exponent``, exact where the result is rational and refused before it grows too large."""
    if isinstance(base, Fraction) and isinstance(exponent, Fraction):
        if exponent.denominator == 1:
            return _exact_power(base, exponent.numerator, position)
        if exponent.denominator <= MAX_EXACT_ROOT_DEGREE:
            root = _exact_root(base, exponent.denominator)
            if root is not None:
                return _exact_power(root, exponent.numerator, position)
        if base < 0:
            if exponent.denominator % 2 == 0:
                raise CalcError("a negative number to this fractional power has no real value", position)
            # An odd root of a negative number is real: (-2)^(1/3) = -(2^(1/3)).
            magnitude = _float_power(-base, exponent, position)
            return -magnitude if exponent.numerator % 2 else magnitude
    return _float_power(base, exponent, position)


def _exact_power(base: Fraction, exponent: int, position: int | None) -> Fraction:
    if base == 0:
        if exponent < 0:
            raise CalcError("division by zero", position)
        return Fraction(1 if exponent == 0 else 0)
    if base in (1, -1):
        return base ** (exponent % 2)
    size = max(abs(base.numerator).bit_length(), base.denominator.bit_length())
    # A lower bound on the result's size, so 9^9^9 is refused before anything is computed; when it passes,
    # the true size is at most twice it, so the computation stays cheap.
    if (size - 1) * abs(exponent) >= MAX_RESULT_BITS:
        shown = f" {exponent}" if len(str(exponent)) <= 20 else ""
        raise CalcError(
            f"exponent{shown} too large: the exact result would exceed the limit of {MAX_RESULT_BITS} bits "
            f"(about {RESULT_DIGITS} digits)",
            position,
        )
    return _checked(base**exponent, position)


def _exact_root(value: Fraction, degree: int) -> Fraction | None:
    """The exact ``degree``-th root of ``value`` if it is rational, else None."""
    if value < 0:
        if degree % 2 == 0:
            return None
        root = _exact_root(-value, degree)
        return None if root is None else -root
    numerator = _integer_root(value.numerator, degree)
    denominator = _integer_root(value.denominator, degree)
    if numerator is None or denominator is None:
        return None
    return Fraction(numerator, denominator)


def _integer_root(n: int, degree: int) -> int | None:
    """The exact integer ``degree``-th root of ``n`` >= 0, or None; integer Newton, as floats overflow."""
    if n < 2:
        return n
    if degree == 2:
        root = math.isqrt(n)
        return root if root * root == n else None
    x = 1 << -(-n.bit_length() // degree)  # an overestimate, which Newton's method needs to descend from
    while True:
        y = ((degree - 1) * x + n // x ** (degree - 1)) // degree
        if y >= x:
            break
        x = y
    return x if x**degree == n else None


def _float_power(base: Value, exponent: Value, position: int | None) -> float:
    try:
        b, e = float(base), float(exponent)
        if b == 0 and e < 0:
            raise CalcError("division by zero", position)
        if b < 0 and not e.is_integer():
            raise CalcError("a negative number to a non-integer power has no real value", position)
        result = math.pow(b, e)
        _checked(result, position)
        return result
    except OverflowError:
        raise CalcError("result too large for floating point (overflow)", position) from None


# --------------------------------------------------------------------------------------------- functions


def _integer(value: Value, function: str) -> int:
    if isinstance(value, Fraction) and value.denominator == 1:
        return value.numerator
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise CalcError(f"{function}() needs whole numbers, got {format_value(value)}")


def _exact(value: Value) -> Fraction:
    # repr is the shortest decimal that reads back as the same float, so round(2.675, 2) gives 2.68 as a
    # person expects rather than 2.67 from the binary value 2.67499999...
    return Fraction(repr(value)) if isinstance(value, float) else value


def _round(args: list[Value]) -> Value:
    digits = _integer(args[1], "round") if len(args) > 1 else 0
    if abs(digits) > MAX_ROUND_DIGITS:
        raise CalcError(f"round() digits must be between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}")
    scale = Fraction(10) ** digits
    scaled = _exact(args[0]) * scale
    # Half away from zero (2.5 -> 3), the school rule, not Python's round-half-to-even.
    magnitude = math.floor(abs(scaled) + Fraction(1, 2))
    return Fraction(magnitude if scaled >= 0 else -magnitude) / scale


def _sqrt(args: list[Value]) -> Value:
    x = args[0]
    if x < 0:
        raise CalcError("sqrt() of a negative number has no real value")
    if isinstance(x, Fraction) and (root := _exact_root(x, 2)) is not None:
        return root
    return math.sqrt(x)


def _factorial(args: list[Value]) -> Value:
    n = args[0]
    if not (isinstance(n, Fraction) and n.denominator == 1 and n >= 0):
        raise CalcError(f"factorial() needs a non-negative whole number, got {format_value(n)}")
    if n > MAX_FACTORIAL:
        raise CalcError(f"factorial() is limited to arguments up to {MAX_FACTORIAL}")
    return Fraction(math.factorial(n.numerator))


def _log(x: Value, base: Value | None, function: str) -> Value:
    if x <= 0:
        raise CalcError(f"{function}() needs a positive number, got {format_value(x)}")
    if base is None:
        return _ln(x)
    if base <= 0 or base == 1:
        raise CalcError(f"{function}() base must be positive and not 1")
    approx = _ln(x) / _ln(base)
    # log10(1000) should be exactly 3, not the float 2.9999999999999996; check the nearest integer exactly.
    if isinstance(x, Fraction) and isinstance(base, Fraction) and abs(approx - round(approx)) < 1e-9:
        k = round(approx)
        size = max(base.numerator.bit_length(), base.denominator.bit_length())
        if (abs(k) + 1) * size <= MAX_RESULT_BITS and base**k == x:
            return Fraction(k)
    return approx


def _ln(x: Value) -> float:
    # Logs of numerator and denominator separately: math.log takes ints of any size, while an exact number
    # past 2**1024 cannot become a float at all.
    if isinstance(x, Fraction):
        return math.log(x.numerator) - math.log(x.denominator)
    return math.log(x)


def _gcd(args: list[Value]) -> Value:
    return Fraction(math.gcd(*(_integer(a, "gcd") for a in args)))


def _lcm(args: list[Value]) -> Value:
    numbers = [_integer(a, "lcm") for a in args]
    result = 1
    for n in numbers:
        # One step at a time so a runaway product is refused before it grows further.
        result = int(_checked(math.lcm(result, n)))
    return Fraction(result)


def _floor_ceil(rounder: Callable[[Value], int]) -> Callable[[list[Value]], Value]:
    return lambda args: Fraction(rounder(args[0]))


def _float_function(function: Callable[[float], float]) -> Callable[[list[Value]], Value]:
    return lambda args: function(float(args[0]))


@dataclass(frozen=True)
class Function:
    apply: Callable[[list[Value]], Value]
    min_args: int
    max_args: int

    def arity_text(self) -> str:
        if self.min_args == self.max_args:
            return f"{self.min_args} argument{'s' if self.min_args != 1 else ''}"
        if self.max_args > 100:
            return f"at least {self.min_args} argument{'s' if self.min_args != 1 else ''}"
        return f"{self.min_args} to {self.max_args} arguments"


_MANY = 1_000  # no real call has more arguments; the expression-length cap bounds it anyway

FUNCTIONS: dict[str, Function] = {
    "abs": Function(lambda a: abs(a[0]), 1, 1),
    "sqrt": Function(_sqrt, 1, 1),
    "round": Function(_round, 1, 2),
    "floor": Function(_floor_ceil(math.floor), 1, 1),
    "ceil": Function(_floor_ceil(math.ceil), 1, 1),
    "min": Function(min, 1, _MANY),
    "max": Function(max, 1, _MANY),
    "gcd": Function(_gcd, 1, _MANY),
    "lcm": Function(_lcm, 1, _MANY),
    "factorial": Function(_factorial, 1, 1),
    "exp": Function(_float_function(math.exp), 1, 1),
    "ln": Function(lambda a: _log(a[0], None, "ln"), 1, 1),
    "log": Function(lambda a: _log(a[0], a[1] if len(a) > 1 else None, "log"), 1, 2),
    "log10": Function(lambda a: _log(a[0], Fraction(10), "log10"), 1, 1),
    "log2": Function(lambda a: _log(a[0], Fraction(2), "log2"), 1, 1),
    "sin": Function(_float_function(math.sin), 1, 1),
    "cos": Function(_float_function(math.cos), 1, 1),
    "tan": Function(_float_function(math.tan), 1, 1),
    "asin": Function(_float_function(math.asin), 1, 1),
    "acos": Function(_float_function(math.acos), 1, 1),
    "atan": Function(_float_function(math.atan), 1, 1),
    "degrees": Function(_float_function(math.degrees), 1, 1),
    "radians": Function(_float_function(math.radians), 1, 1),
}

CONSTANTS: dict[str, Value] = {"pi": math.pi, "e": math.e, "tau": math.tau}


# ------------------------------------------------------------------------------------------------ output


def format_value(value: Value) -> str:
    """Integers and finite decimals exactly, other fractions as ``p/q ≈ decimal``, floats as ``≈ decimal``."""
    if isinstance(value, float):
        return f"≈ {value:.{APPROX_DIGITS}g}"
    if value.denominator == 1:
        return str(value.numerator)
    decimal = _finite_decimal(value)
    if decimal is not None:
        return decimal
    with localcontext() as context:
        context.prec = APPROX_DIGITS
        approx = Decimal(value.numerator) / Decimal(value.denominator)
    return f"{value.numerator}/{value.denominator} ≈ {approx:g}"


def _finite_decimal(value: Fraction) -> str | None:
    """``value`` as an exact decimal string if its expansion ends within ``MAX_DECIMAL_PLACES``, else None."""
    denominator = value.denominator
    twos = (denominator & -denominator).bit_length() - 1
    denominator >>= twos
    fives = 0
    while denominator % 5 == 0 and fives <= MAX_DECIMAL_PLACES:
        denominator //= 5
        fives += 1
    places = max(twos, fives)
    if denominator != 1 or places > MAX_DECIMAL_PLACES:
        return None
    digits = str(abs(value.numerator) * 10**places // value.denominator).rjust(places + 1, "0")
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


# ---------------------------------------------------------------------------------------------- entry


def evaluate(expression: str) -> Value:
    """The value of ``expression``; raises ``CalcError`` (whose text is meant for the model) if refused."""
    try:
        if len(expression) > MAX_EXPRESSION_CHARS:
            raise CalcError(
                f"expression too long: {len(expression)} characters, the limit is {MAX_EXPRESSION_CHARS}"
            )
        return _evaluate(_Parser(tokenize(expression)).parse())
    except CalcError as err:
        err.expression = expression
        raise


def calculate(expression: str) -> str:
    """The formatted value of ``expression``, as the calculator tool returns it."""
    return format_value(evaluate(expression))
