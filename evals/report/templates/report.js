// "Show the scripted and superseded runs": their leaderboard rows are hidden until asked for.
(function () {
  var box = document.getElementById("show-aside");
  if (!box) {
    return;
  }
  function apply() {
    document.body.classList.toggle("show-aside", box.checked);
  }
  box.addEventListener("change", apply);
  apply();
})();

// Each leaderboard shows its first TOP rows (and your run's) until "show all" is pressed, and
// sorts by a clicked column head: accuracy highest first, the rest lowest first; ties keep
// the page's order.
var TOP = 12;
document.querySelectorAll("table.leaderboard").forEach(function (board) {
  var body = board.querySelector("tbody");
  var order = Array.prototype.slice.call(body.rows);
  var more = board.parentNode.querySelector("button.show-all");
  function fold() {
    var rank = 0;
    var folded = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      if (row.classList.contains("aside")) {
        return;
      }
      rank += 1;
      row.querySelector(".rank").textContent = String(rank);
      var hide = rank > TOP && !row.classList.contains("focus");
      row.classList.toggle("more", hide);
      folded += hide ? 1 : 0;
    });
    if (more) {
      more.hidden = folded === 0;
      more.textContent = board.classList.contains("all")
        ? "show the first " + TOP
        : "show all " + rank + " configurations";
    }
  }
  if (more) {
    more.addEventListener("click", function () {
      board.classList.toggle("all");
      fold();
    });
  }
  function value(row, key) {
    var text = row.dataset[key];
    return text === "" ? Infinity : parseFloat(text);
  }
  board.querySelectorAll("th.sortable").forEach(function (head) {
    head.addEventListener("click", function () {
      var key = head.dataset.sort;
      var down = head.dataset.order === "desc";
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var diff = down ? value(b, key) - value(a, key) : value(a, key) - value(b, key);
        if (diff === 0 && key === "accuracy") {
          diff = value(a, "turns") - value(b, "turns");
        }
        return diff || order.indexOf(a) - order.indexOf(b);
      });
      rows.forEach(function (row) {
        body.appendChild(row);
      });
      fold();
      board.querySelectorAll("th.sortable").forEach(function (other) {
        other.removeAttribute("aria-sort");
      });
      head.setAttribute("aria-sort", down ? "descending" : "ascending");
    });
  });
  fold();
});
